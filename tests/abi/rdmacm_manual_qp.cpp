// SPDX-License-Identifier: BSD-3-Clause
// An rdma_cm program whose QP is not on its id: it moves the QP itself
// with rdma_init_qp_attr, names it in rdma_conn_param.qp_num, and (as the
// active side) sends the RTU with rdma_establish after CONNECT_RESPONSE, as
// UCX's rdmacm transport does. Its data exchange is ucmatose's (10 SENDs
// of 100 bytes each way: the server sends first, the client replies), so
// either side can face ucmatose.
//
//   rdmacm_manual_qp -s ADDRESS [-p PORT]   serve on ADDRESS
//   rdmacm_manual_qp -c ADDRESS [-p PORT]   connect to ADDRESS
//
// Prints "rdmacm_manual_qp: end 0" when every message came through and the
// connection ended; exits 1 with the failing step otherwise.
#include <rdma/rdma_cma.h>

#include <arpa/inet.h>
#include <netdb.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

namespace {

constexpr int kMessages = 10;
constexpr int kSize = 100;

[[noreturn]] void die(const char* what) {
  std::printf("rdmacm_manual_qp: %s failed: %s\n", what, std::strerror(errno));
  std::fflush(stdout);
  std::exit(1);
}

rdma_cm_event* expect(rdma_event_channel* ch, rdma_cm_event_type type) {
  rdma_cm_event* e = nullptr;
  if (rdma_get_cm_event(ch, &e) != 0) die("rdma_get_cm_event");
  if (e->event != type) {
    std::printf("rdmacm_manual_qp: got %s (status %d), wanted %s\n", rdma_event_str(e->event), e->status,
                rdma_event_str(type));
    std::exit(1);
  }
  return e;
}

struct Node {
  ibv_pd* pd = nullptr;
  ibv_cq* cq = nullptr;
  ibv_qp* qp = nullptr;
  ibv_mr* mr = nullptr;
  char buf[2 * kMessages * kSize]{};
};

void make_qp(Node& n, ibv_context* verbs) {
  n.pd = ibv_alloc_pd(verbs);
  if (!n.pd) die("ibv_alloc_pd");
  n.cq = ibv_create_cq(verbs, 4 * kMessages, nullptr, nullptr, 0);
  if (!n.cq) die("ibv_create_cq");
  ibv_qp_init_attr a{};
  a.send_cq = a.recv_cq = n.cq;
  a.qp_type = IBV_QPT_RC;
  a.cap.max_send_wr = a.cap.max_recv_wr = kMessages;
  a.cap.max_send_sge = a.cap.max_recv_sge = 1;
  n.qp = ibv_create_qp(n.pd, &a);
  if (!n.qp) die("ibv_create_qp");
  n.mr = ibv_reg_mr(n.pd, n.buf, sizeof n.buf, IBV_ACCESS_LOCAL_WRITE);
  if (!n.mr) die("ibv_reg_mr");
}

// To STATE with what rdma_init_qp_attr gives.
void move(rdma_cm_id* id, Node& n, ibv_qp_state state, uint32_t peer_qpn) {
  ibv_qp_attr a{};
  int mask = 0;
  a.qp_state = state;
  if (rdma_init_qp_attr(id, &a, &mask) != 0) die("rdma_init_qp_attr");
  if (a.qp_state != state || !(mask & IBV_QP_STATE)) die("rdma_init_qp_attr: the state");
  if (state == IBV_QPS_RTR && (!(mask & IBV_QP_DEST_QPN) || a.dest_qp_num != peer_qpn)) {
    std::printf("rdmacm_manual_qp: RTR's destination QP %u, the peer's is %u\n", a.dest_qp_num, peer_qpn);
    std::exit(1);
  }
  if (ibv_modify_qp(n.qp, &a, mask) != 0) die("ibv_modify_qp");
}

void post_recvs(Node& n) {
  for (int i = 0; i < kMessages; ++i) {
    ibv_sge sge{reinterpret_cast<uintptr_t>(n.buf + i * kSize), kSize, n.mr->lkey};
    ibv_recv_wr wr{}, *bad = nullptr;
    wr.wr_id = i;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    if (ibv_post_recv(n.qp, &wr, &bad) != 0) die("ibv_post_recv");
  }
}

void post_sends(Node& n) {
  for (int i = 0; i < kMessages; ++i) {
    char* p = n.buf + (kMessages + i) * kSize;
    std::memset(p, 'a' + i, kSize);
    ibv_sge sge{reinterpret_cast<uintptr_t>(p), kSize, n.mr->lkey};
    ibv_send_wr wr{}, *bad = nullptr;
    wr.wr_id = 100 + i;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_SEND;
    wr.send_flags = IBV_SEND_SIGNALED;
    if (ibv_post_send(n.qp, &wr, &bad) != 0) die("ibv_post_send");
  }
}

// Waits for COUNT completions of OPCODE's kind, each successful.
void complete(Node& n, bool recv, int count) {
  for (int got = 0; got < count;) {
    ibv_wc wc{};
    const int r = ibv_poll_cq(n.cq, 1, &wc);
    if (r < 0) die("ibv_poll_cq");
    if (r == 0) continue;
    if (wc.status != IBV_WC_SUCCESS) {
      std::printf("rdmacm_manual_qp: completion %s\n", ibv_wc_status_str(wc.status));
      std::exit(1);
    }
    if (recv != (wc.opcode == IBV_WC_RECV)) continue;
    if (recv && wc.byte_len != kSize) {
      std::printf("rdmacm_manual_qp: a message of %u bytes\n", wc.byte_len);
      std::exit(1);
    }
    ++got;
  }
}

void connect_params(rdma_conn_param& p, const Node& n) {
  p = {};
  p.qp_num = n.qp->qp_num;
  p.responder_resources = 1;
  p.initiator_depth = 1;
  p.retry_count = 7;
  p.rnr_retry_count = 7;
}

rdma_addrinfo* address(const char* host, const char* port, bool passive) {
  rdma_addrinfo hints{}, *res = nullptr;
  hints.ai_port_space = RDMA_PS_TCP;
  if (passive) hints.ai_flags = RAI_PASSIVE;
  if (rdma_getaddrinfo(host, port, &hints, &res) != 0) die("rdma_getaddrinfo");
  return res;
}

int serve(rdma_event_channel* ch, const char* host, const char* port) {
  rdma_cm_id* listen_id = nullptr;
  if (rdma_create_id(ch, &listen_id, nullptr, RDMA_PS_TCP) != 0) die("rdma_create_id");
  rdma_addrinfo* ai = address(host, port, true);
  if (rdma_bind_addr(listen_id, ai->ai_src_addr) != 0) die("rdma_bind_addr");
  rdma_freeaddrinfo(ai);
  if (rdma_listen(listen_id, 1) != 0) die("rdma_listen");
  rdma_cm_event* e = expect(ch, RDMA_CM_EVENT_CONNECT_REQUEST);
  rdma_cm_id* id = e->id;
  const uint32_t peer_qpn = e->param.conn.qp_num;
  rdma_ack_cm_event(e);
  auto node = std::make_unique<Node>();  // on the heap: a client of uroced cannot register its stack
  Node& n = *node;
  make_qp(n, id->verbs);
  // As librdmacm's rdma_accept does for a QP on the id: RTS before the REP.
  move(id, n, IBV_QPS_INIT, peer_qpn);
  post_recvs(n);
  move(id, n, IBV_QPS_RTR, peer_qpn);
  move(id, n, IBV_QPS_RTS, peer_qpn);
  rdma_conn_param p;
  connect_params(p, n);
  if (rdma_accept(id, &p) != 0) die("rdma_accept");
  rdma_ack_cm_event(expect(ch, RDMA_CM_EVENT_ESTABLISHED));
  post_sends(n);
  complete(n, false, kMessages);
  complete(n, true, kMessages);
  if (rdma_disconnect(id) != 0) die("rdma_disconnect");
  rdma_ack_cm_event(expect(ch, RDMA_CM_EVENT_DISCONNECTED));
  ibv_destroy_qp(n.qp);
  rdma_destroy_id(id);
  rdma_destroy_id(listen_id);
  return 0;
}

int connect_to(rdma_event_channel* ch, const char* host, const char* port) {
  rdma_cm_id* id = nullptr;
  if (rdma_create_id(ch, &id, nullptr, RDMA_PS_TCP) != 0) die("rdma_create_id");
  rdma_addrinfo* ai = address(host, port, false);
  if (rdma_resolve_addr(id, ai->ai_src_addr, ai->ai_dst_addr, 2000) != 0) die("rdma_resolve_addr");
  rdma_freeaddrinfo(ai);
  rdma_ack_cm_event(expect(ch, RDMA_CM_EVENT_ADDR_RESOLVED));
  if (rdma_resolve_route(id, 2000) != 0) die("rdma_resolve_route");
  rdma_ack_cm_event(expect(ch, RDMA_CM_EVENT_ROUTE_RESOLVED));
  auto node = std::make_unique<Node>();  // on the heap: a client of uroced cannot register its stack
  Node& n = *node;
  make_qp(n, id->verbs);
  move(id, n, IBV_QPS_INIT, 0);
  post_recvs(n);
  rdma_conn_param p;
  connect_params(p, n);
  if (rdma_connect(id, &p) != 0) die("rdma_connect");
  rdma_cm_event* e = expect(ch, RDMA_CM_EVENT_CONNECT_RESPONSE);
  const uint32_t peer_qpn = e->param.conn.qp_num;
  rdma_ack_cm_event(e);
  move(id, n, IBV_QPS_RTR, peer_qpn);
  move(id, n, IBV_QPS_RTS, peer_qpn);
  if (rdma_establish(id) != 0) die("rdma_establish");
  complete(n, true, kMessages);
  post_sends(n);
  complete(n, false, kMessages);
  rdma_ack_cm_event(expect(ch, RDMA_CM_EVENT_DISCONNECTED));
  rdma_disconnect(id);
  ibv_destroy_qp(n.qp);
  rdma_destroy_id(id);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const char* server = nullptr;
  const char* peer = nullptr;
  std::string port = "7471";
  for (int op; (op = getopt(argc, argv, "s:c:p:")) != -1;) {
    if (op == 's') server = optarg;
    else if (op == 'c') peer = optarg;
    else if (op == 'p') port = optarg;
    else return 2;
  }
  if (!server == !peer) {
    std::fprintf(stderr, "usage: rdmacm_manual_qp -s ADDRESS | -c ADDRESS [-p PORT]\n");
    return 2;
  }
  setvbuf(stdout, nullptr, _IOLBF, 0);
  rdma_event_channel* ch = rdma_create_event_channel();
  if (!ch) die("rdma_create_event_channel");
  const int rc = server ? serve(ch, server, port.c_str()) : connect_to(ch, peer, port.c_str());
  rdma_destroy_event_channel(ch);
  std::printf("rdmacm_manual_qp: end %d\n", rc);
  return rc;
}
