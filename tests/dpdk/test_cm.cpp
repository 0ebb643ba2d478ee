// SPDX-License-Identifier: BSD-3-Clause
// The connection manager between two devices on a ring-PMD pair, each with
// its engine on a thread: a listener, connect with private data both ways,
// data over the connected QPs (their PSNs, MTU and depths set by the CM
// exchange), a disconnect, a REJ for a port nobody listens on, and a
// rejection by the application; a's capture holds the CM frames in order,
// each from QP1 to QP1 with the GSI Q_Key and rdma_cm's header in the REQ.
#include <catch2/catch.hpp>

#include <sys/epoll.h>

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "cm/cm_messages.h"
#include "cm/cma_header.h"
#include "uroce/capture/pcap_file.h"
#include "uroce/cm/connection_manager.h"
#include "uroce/port/dpdk_port.h"
#include "uroce/port/endpoint.h"
#include "uroce/verbs/completion_queue.h"
#include "uroce/verbs/device.h"
#include "uroce/verbs/memory_region.h"
#include "uroce/verbs/protection_domain.h"
#include "uroce/verbs/queue_pair.h"
#include "uroce/wire/parser.h"

namespace uroce::test {
namespace {

using namespace std::chrono_literals;

// One side: an endpoint on its ring port, threaded, with a manager, a PD,
// a CQ and a registered buffer.
struct CmSide {
  std::unique_ptr<Endpoint> ep;
  std::unique_ptr<cm::ConnectionManager> cm;
  std::unique_ptr<ProtectionDomain> pd;
  std::unique_ptr<CompletionQueue> cq;
  std::vector<uint8_t> buf = std::vector<uint8_t>(1 << 16);
  std::unique_ptr<MemoryRegion> mr;

  CmSide(std::unique_ptr<DpdkPort> port, const char* ip, const std::string& pcap = {}) {
    std::string error;
    EndpointConfig c;
    c.ip = ip;
    c.pcap = pcap;
    ep = Endpoint::adopt(std::move(port), c, error);
    INFO(error);
    REQUIRE(ep);
    REQUIRE(ep->device().start_engine_thread(-1, error));
    cm = cm::ConnectionManager::open(ep->device(), error);
    INFO(error);
    REQUIRE(cm);
    pd = ep->device().alloc_pd();
    int err = 0;
    cq = ep->device().create_cq(64, err);
    REQUIRE(cq);
    mr = pd->reg_mr(buf.data(), buf.size(),
                    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ, err);
    REQUIRE(mr);
  }
  ~CmSide() {
    cm.reset();
    if (ep) ep->device().stop_engine_thread();
  }

  std::unique_ptr<QueuePair> qp() {
    QpInitAttr init;
    init.send_cq = init.recv_cq = cq.get();
    init.cap = {.max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 1, .max_recv_sge = 1, .max_inline_data = 0};
    int err = 0;
    auto q = pd->create_qp(init, err);
    REQUIRE(q);
    return q;
  }

  // The next event within `limit`, waiting on the manager's descriptor.
  cm::Event next_event(std::chrono::milliseconds limit = 5000ms) {
    const int ep_fd = epoll_create1(EPOLL_CLOEXEC);
    epoll_event ev{};
    ev.events = EPOLLIN;
    epoll_ctl(ep_fd, EPOLL_CTL_ADD, cm->event_fd(), &ev);
    cm::Event e;
    const auto until = std::chrono::steady_clock::now() + limit;
    bool got = false;
    while (!(got = cm->get_event(e)) && std::chrono::steady_clock::now() < until) epoll_wait(ep_fd, &ev, 1, 100);
    close(ep_fd);
    INFO("no CM event within " << limit.count() << " ms");
    REQUIRE(got);
    return e;
  }

  wire::IpAddr addr() const { return ep->device().gids()[kAddressGidIndex]; }
};

struct CmPair {
  std::unique_ptr<DpdkPort> pa, pb;
  std::unique_ptr<CmSide> a, b;
  explicit CmPair(const char* name, const std::string& pcap = {}) {
    std::string error;
    REQUIRE(open_ring_pair(name, 1500, pa, pb, error));
    a = std::make_unique<CmSide>(std::move(pa), "10.40.0.1", pcap);
    b = std::make_unique<CmSide>(std::move(pb), "10.40.0.2");
  }
};

// The CM MADs a's port sent and received: each a UD SEND ONLY from QP1 to
// QP1 with P_Key 0xFFFF and Q_Key 0x80010000, a whole MAD of class CM,
// version 2, method Send. Returns their attributes in order.
std::vector<cm::Attr> cm_frames(const std::string& pcap) {
  std::string error;
  auto r = capture::PcapReader::open(pcap, error);
  INFO(error);
  REQUIRE(r);
  std::vector<cm::Attr> out;
  capture::CapturedFrame f;
  while (r->next(f)) {
    wire::PacketView v;
    if (wire::parse_frame(f.bytes, v) != wire::ParseError::ok || v.bth().dest_qp() != cm::kGsiQpn) continue;
    CHECK(v.bth().opcode() == 0x64);
    CHECK(v.bth().pkey() == 0xffff);
    CHECK(v.deth().qkey() == cm::kGsiQkey);
    CHECK(v.deth().src_qp() == cm::kGsiQpn);
    REQUIRE(v.payload_len == cm::kMadSize);
    cm::MadHeader h;
    cm::Attr a{};
    REQUIRE(cm::check_cm_header({v.payload, v.payload_len}, h, a) == cm::MadCheck::ok);
    if (a == cm::Attr::req) {
      const cm::Req req = cm::decode_req(v.payload + cm::kMadHeaderSize);
      cm::CmaHeader cma;
      REQUIRE(cm::decode_cma_header(req.private_data, cma));
      CHECK(cma.src.to_string() == "10.40.0.1");
      CHECK(cma.dst.to_string() == "10.40.0.2");
      CHECK(req.primary.flow_label == cm::cma_flow_label(cma.src_port, cm::service_port(req.service_id)));
      CHECK(req.primary.local_lid == 0xffff);
    }
    out.push_back(a);
  }
  return out;
}

std::vector<ibv_wc> drain(CompletionQueue& cq, size_t n) {
  std::vector<ibv_wc> got;
  const auto until = std::chrono::steady_clock::now() + 5s;
  ibv_wc wc[8];
  while (got.size() < n && std::chrono::steady_clock::now() < until) {
    const int k = cq.poll(8, wc);
    if (k > 0) got.insert(got.end(), wc, wc + k);
    else std::this_thread::yield();
  }
  return got;
}

// Over a connected pair: a WRITE of `len` bytes from a into b's buffer,
// then a READ by b of `len` bytes of a's: both complete and move the data.
void write_then_read(CmSide& a, QueuePair& qa, CmSide& b, QueuePair& qb, uint32_t len) {
  for (size_t i = 0; i < len; ++i) a.buf[i] = uint8_t(i * 7 + 1);
  ibv_sge sge{reinterpret_cast<uintptr_t>(a.buf.data()), len, a.mr->lkey()};
  SendWr wr;
  wr.wr_id = 1;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_RDMA_WRITE;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.wr.rdma.remote_addr = reinterpret_cast<uintptr_t>(b.buf.data() + 8192);
  wr.wr.rdma.rkey = b.mr->rkey();
  const SendWr* bad = nullptr;
  REQUIRE(qa.post_send(&wr, &bad) == 0);
  auto wc = drain(*a.cq, 1);
  REQUIRE(wc.size() == 1);
  CHECK(wc[0].status == IBV_WC_SUCCESS);
  CHECK(std::memcmp(b.buf.data() + 8192, a.buf.data(), len) == 0);
  for (size_t i = 0; i < len; ++i) a.buf[16384 + i] = uint8_t(i * 3 + 5);
  ibv_sge rsge{reinterpret_cast<uintptr_t>(b.buf.data() + 32768), len, b.mr->lkey()};
  wr.sg_list = &rsge;
  wr.opcode = IBV_WR_RDMA_READ;
  wr.wr.rdma.remote_addr = reinterpret_cast<uintptr_t>(a.buf.data() + 16384);
  wr.wr.rdma.rkey = a.mr->rkey();
  REQUIRE(qb.post_send(&wr, &bad) == 0);
  wc = drain(*b.cq, 1);
  REQUIRE(wc.size() == 1);
  CHECK(wc[0].status == IBV_WC_SUCCESS);
  CHECK(std::memcmp(b.buf.data() + 32768, a.buf.data() + 16384, len) == 0);
}

}  // namespace

TEST_CASE("cm: listen, connect, accept, data both ways, disconnect", "[cm-connect]") {
  const std::string pcap = "cm_connect.pcap";
  std::remove(pcap.c_str());
  CmPair p("cm_conn", pcap);
  CmSide& a = *p.a;
  CmSide& b = *p.b;
  REQUIRE(b.cm->listen(18515) == 0);
  CHECK(b.cm->listen(18515) == EADDRINUSE);

  auto qa = a.qp();
  auto qb = b.qp();
  cm::ConnParam cp;
  cp.private_data = {'h', 'e', 'l', 'l', 'o'};
  cp.responder_resources = 4;
  cp.initiator_depth = 2;
  cp.flow_control = true;
  uint64_t aid = 0;
  REQUIRE(a.cm->connect(*qa, b.addr(), 18515, cp, aid) == 0);
  CHECK(qa->state() == IBV_QPS_INIT);

  const cm::Event req = b.next_event();
  REQUIRE(req.type == cm::EventType::connect_request);
  CHECK(req.port == 18515);
  CHECK(req.peer == a.addr());
  CHECK(req.peer_port >= 32768);
  CHECK(req.peer_qpn == qa->qp_num());
  REQUIRE(req.private_data.size() == 56);
  CHECK(std::memcmp(req.private_data.data(), "hello", 5) == 0);
  CHECK(req.private_data[5] == 0);
  // The peer's depths, as this side takes them.
  CHECK(req.responder_resources == 2);
  CHECK(req.initiator_depth == 4);
  CHECK(req.flow_control);

  cm::ConnParam ap;
  ap.private_data = {'w', 'e', 'l', 'c', 'o', 'm', 'e'};
  ap.responder_resources = req.responder_resources;
  ap.initiator_depth = req.initiator_depth;
  ap.flow_control = true;
  REQUIRE(b.cm->accept(req.id, *qb, ap) == 0);
  CHECK(qb->state() == IBV_QPS_RTS);

  const cm::Event est_a = a.next_event();
  REQUIRE(est_a.type == cm::EventType::established);
  CHECK(est_a.id == aid);
  CHECK(est_a.flow_control);
  REQUIRE(est_a.private_data.size() == 196);
  CHECK(std::memcmp(est_a.private_data.data(), "welcome", 7) == 0);
  CHECK(qa->state() == IBV_QPS_RTS);
  const cm::Event est_b = b.next_event();
  REQUIRE(est_b.type == cm::EventType::established);
  CHECK(est_b.id == req.id);

  // What the exchange settled: each side sends at the PSN the other expects.
  ibv_qp_attr attr_a{}, attr_b{};
  QpInitAttr init;
  REQUIRE(qa->query(attr_a, IBV_QP_SQ_PSN | IBV_QP_RQ_PSN | IBV_QP_DEST_QPN | IBV_QP_PATH_MTU |
                                IBV_QP_MAX_QP_RD_ATOMIC | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_TIMEOUT,
                    init) == 0);
  REQUIRE(qb->query(attr_b, IBV_QP_SQ_PSN | IBV_QP_RQ_PSN | IBV_QP_DEST_QPN | IBV_QP_PATH_MTU |
                                IBV_QP_MAX_QP_RD_ATOMIC | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_TIMEOUT,
                    init) == 0);
  CHECK(attr_a.sq_psn == attr_b.rq_psn);
  CHECK(attr_b.sq_psn == attr_a.rq_psn);
  CHECK(attr_a.dest_qp_num == qb->qp_num());
  CHECK(attr_b.dest_qp_num == qa->qp_num());
  CHECK(attr_a.path_mtu == IBV_MTU_1024);
  CHECK(attr_b.path_mtu == IBV_MTU_1024);
  CHECK(attr_a.max_rd_atomic == 2);
  CHECK(attr_b.max_dest_rd_atomic == 2);
  CHECK(attr_b.max_rd_atomic == 4);
  CHECK(attr_a.max_dest_rd_atomic == 4);
  CHECK(attr_a.timeout == 19);
  CHECK(attr_b.timeout == 19);

  // A WRITE from a and a READ from b move data.
  write_then_read(a, *qa, b, *qb, 4096);

  // b disconnects: both sides hear of it, both QPs are in the error state.
  REQUIRE(b.cm->disconnect(req.id) == 0);
  CHECK(qb->state() == IBV_QPS_ERR);
  const cm::Event da = a.next_event();
  CHECK(da.type == cm::EventType::disconnected);
  CHECK(da.id == aid);
  CHECK(qa->state() == IBV_QPS_ERR);
  const cm::Event db = b.next_event();
  CHECK(db.type == cm::EventType::disconnected);
  CHECK(db.status == 0);
  CHECK(a.cm->disconnect(aid) == 0);  // already down: nothing more is sent (the capture shows)

  // On a's wire: REQ, REP, RTU, then b's DREQ and a's DREP.
  qa.reset();
  qb.reset();
  p.a.reset();  // closes the capture
  p.b.reset();
  const std::vector<cm::Attr> want = {cm::Attr::req, cm::Attr::rep, cm::Attr::rtu, cm::Attr::dreq, cm::Attr::drep};
  CHECK(cm_frames(pcap) == want);
}

TEST_CASE("cm: QPs the application moves itself: connect and accept by number, qp_attr, establish",
          "[cm-manual]") {
  const std::string pcap = "cm_manual.pcap";
  std::remove(pcap.c_str());
  CmPair p("cm_manual", pcap);
  CmSide& a = *p.a;
  CmSide& b = *p.b;
  REQUIRE(b.cm->listen(18520) == 0);
  auto qa = a.qp();
  auto qb = b.qp();
  cm::ConnParam cp;
  cp.responder_resources = 2;
  cp.initiator_depth = 3;
  uint64_t aid = 0;
  CHECK(a.cm->connect(0, IBV_QPT_RC, b.addr(), 18520, cp, aid) == EINVAL);
  CHECK(a.cm->connect(qa->qp_num(), IBV_QPT_UD, b.addr(), 18520, cp, aid) == EINVAL);
  REQUIRE(a.cm->connect(qa->qp_num(), IBV_QPT_RC, b.addr(), 18520, cp, aid) == 0);
  CHECK(qa->state() == IBV_QPS_RESET);  // the manager never touches it

  // Before the REP, the active side knows INIT's attributes only.
  ibv_qp_attr at{};
  int mask = 0;
  at.qp_state = IBV_QPS_RTR;
  CHECK(a.cm->qp_attr(aid, at, mask) == EINVAL);
  at.qp_state = IBV_QPS_INIT;
  REQUIRE(a.cm->qp_attr(aid, at, mask) == 0);
  CHECK(mask == (IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS));
  CHECK(at.qp_access_flags == (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC));
  REQUIRE(qa->modify(at, mask) == 0);

  // The passive side moves its QP from the request on, before it accepts.
  const cm::Event req = b.next_event();
  REQUIRE(req.type == cm::EventType::connect_request);
  CHECK(req.peer_qpn == qa->qp_num());
  for (ibv_qp_state st : {IBV_QPS_INIT, IBV_QPS_RTR, IBV_QPS_RTS}) {
    ibv_qp_attr x{};
    x.qp_state = st;
    REQUIRE(b.cm->qp_attr(req.id, x, mask) == 0);
    CHECK(x.qp_state == st);
    if (st == IBV_QPS_RTR) {
      CHECK(x.dest_qp_num == qa->qp_num());
      CHECK(x.max_dest_rd_atomic == 3);  // the REQ's initiator depth
    }
    if (st == IBV_QPS_RTS) CHECK(x.max_rd_atomic == 2);  // its responder resources
    REQUIRE(qb->modify(x, mask) == 0);
  }
  ibv_qp_attr bad_state{};
  bad_state.qp_state = IBV_QPS_SQD;
  CHECK(b.cm->qp_attr(req.id, bad_state, mask) == EINVAL);
  cm::ConnParam ap;
  ap.responder_resources = 3;
  ap.initiator_depth = 2;
  CHECK(b.cm->accept(req.id, 0x1000000, ap) == EINVAL);
  REQUIRE(b.cm->accept(req.id, qb->qp_num(), ap) == 0);

  // The REP: connect_response, no RTU until establish().
  const cm::Event resp = a.next_event();
  REQUIRE(resp.type == cm::EventType::connect_response);
  CHECK(resp.id == aid);
  CHECK(resp.peer_qpn == qb->qp_num());
  CHECK(qa->state() == IBV_QPS_INIT);
  for (ibv_qp_state st : {IBV_QPS_RTR, IBV_QPS_RTS}) {
    ibv_qp_attr x{};
    x.qp_state = st;
    REQUIRE(a.cm->qp_attr(aid, x, mask) == 0);
    REQUIRE(qa->modify(x, mask) == 0);
  }
  CHECK(b.cm->establish(req.id) == EINVAL);  // the passive side has nothing to establish
  REQUIRE(a.cm->establish(aid) == 0);
  CHECK(a.cm->establish(aid) == EINVAL);
  const cm::Event est_b = b.next_event();
  REQUIRE(est_b.type == cm::EventType::established);
  CHECK(est_b.id == req.id);

  // Each side sends at the PSN the other expects: a WRITE and a READ.
  ibv_qp_attr attr_a{}, attr_b{};
  QpInitAttr init;
  REQUIRE(qa->query(attr_a, IBV_QP_SQ_PSN | IBV_QP_RQ_PSN | IBV_QP_DEST_QPN, init) == 0);
  REQUIRE(qb->query(attr_b, IBV_QP_SQ_PSN | IBV_QP_RQ_PSN | IBV_QP_DEST_QPN, init) == 0);
  CHECK(attr_a.sq_psn == attr_b.rq_psn);
  CHECK(attr_b.sq_psn == attr_a.rq_psn);
  CHECK(attr_a.dest_qp_num == qb->qp_num());
  CHECK(attr_b.dest_qp_num == qa->qp_num());
  write_then_read(a, *qa, b, *qb, 2048);

  REQUIRE(a.cm->disconnect(aid) == 0);
  CHECK(b.next_event().type == cm::EventType::disconnected);
  CHECK(a.next_event().type == cm::EventType::disconnected);
  qa.reset();
  qb.reset();
  p.a.reset();
  p.b.reset();
  const std::vector<cm::Attr> want = {cm::Attr::req, cm::Attr::rep, cm::Attr::rtu, cm::Attr::dreq, cm::Attr::drep};
  CHECK(cm_frames(pcap) == want);
}

TEST_CASE("cm: service ID resolution (SIDR) for UD ports: answered, refused, nobody there", "[cm-sidr]") {
  const std::string pcap = "cm_sidr.pcap";
  std::remove(pcap.c_str());
  CmPair p("cm_sidr", pcap);
  CmSide& a = *p.a;
  CmSide& b = *p.b;
  REQUIRE(b.cm->listen_ud(7174) == 0);
  CHECK(b.cm->listen_ud(7174) == EADDRINUSE);
  CHECK(b.cm->listen(7174) == 0);  // the TCP port space is another

  cm::ConnParam cp;
  cp.private_data = {'u', 'd'};
  uint64_t aid = 0;
  REQUIRE(a.cm->resolve_service(b.addr(), 7174, cp, aid) == 0);
  const cm::Event req = b.next_event();
  REQUIRE(req.type == cm::EventType::connect_request);
  CHECK(req.ud);
  CHECK(req.port == 7174);
  CHECK(req.peer == a.addr());
  REQUIRE(req.private_data.size() == cm::kSidrReqPrivate - cm::kCmaHeaderSize);
  CHECK(std::memcmp(req.private_data.data(), "ud", 2) == 0);
  const uint8_t reply[] = {'o', 'k'};
  CHECK(b.cm->accept_ud(req.id, 0, 0x01234567, reply) == EINVAL);
  REQUIRE(b.cm->accept_ud(req.id, 0x1234, 0x01234567, reply) == 0);
  CHECK(b.cm->accept_ud(req.id, 0x1234, 0x01234567, reply) == EINVAL);  // answered and forgotten
  const cm::Event est = a.next_event();
  REQUIRE(est.type == cm::EventType::established);
  CHECK(est.ud);
  CHECK(est.id == aid);
  CHECK(est.peer_qpn == 0x1234);
  CHECK(est.qkey == 0x01234567);
  REQUIRE(est.private_data.size() == cm::kSidrRepPrivate);
  CHECK(std::memcmp(est.private_data.data(), "ok", 2) == 0);
  CHECK(a.cm->disconnect(aid) == EINVAL);  // no connection follows

  // Refused by the application: status 2.
  REQUIRE(a.cm->resolve_service(b.addr(), 7174, {}, aid) == 0);
  const cm::Event req2 = b.next_event();
  REQUIRE(req2.type == cm::EventType::connect_request);
  REQUIRE(b.cm->reject(req2.id, {}) == 0);
  const cm::Event rej = a.next_event();
  CHECK(rej.type == cm::EventType::rejected);
  CHECK(rej.ud);
  CHECK(rej.status == 2);

  // Nobody there: status 1 (unsupported), at once.
  REQUIRE(b.cm->stop_listening_ud(7174) == 0);
  REQUIRE(a.cm->resolve_service(b.addr(), 7174, {}, aid) == 0);
  const cm::Event none = a.next_event(1000ms);
  CHECK(none.type == cm::EventType::rejected);
  CHECK(none.status == 1);

  p.a.reset();
  p.b.reset();
  const std::vector<cm::Attr> want = {cm::Attr::sidr_req, cm::Attr::sidr_rep, cm::Attr::sidr_req, cm::Attr::sidr_rep,
                                      cm::Attr::sidr_req, cm::Attr::sidr_rep};
  CHECK(cm_frames(pcap) == want);
}

TEST_CASE("cm: a request the application is slow to answer: the peer's retry gets an MRA", "[cm-mra]") {
  const std::string pcap = "cm_mra.pcap";
  std::remove(pcap.c_str());
  CmPair p("cm_mra", pcap);
  CmSide& a = *p.a;
  CmSide& b = *p.b;
  REQUIRE(b.cm->listen(18521) == 0);
  auto qa = a.qp();
  auto qb = b.qp();
  uint64_t aid = 0;
  REQUIRE(a.cm->connect(*qa, b.addr(), 18521, {}, aid) == 0);
  const cm::Event req = b.next_event();
  REQUIRE(req.type == cm::EventType::connect_request);
  // a sends its REQ again after 6144 ms (Linux's timers); b, not yet
  // answering, sends an MRA, and a keeps waiting.
  std::this_thread::sleep_for(7s);
  cm::Event none;
  CHECK_FALSE(a.cm->get_event(none));
  REQUIRE(b.cm->accept(req.id, *qb, {}) == 0);
  CHECK(a.next_event().type == cm::EventType::established);
  CHECK(b.next_event().type == cm::EventType::established);
  REQUIRE(a.cm->disconnect(aid) == 0);
  CHECK(b.next_event().type == cm::EventType::disconnected);
  CHECK(a.next_event().type == cm::EventType::disconnected);
  qa.reset();
  qb.reset();
  p.a.reset();  // closes the capture
  p.b.reset();
  const std::vector<cm::Attr> got = cm_frames(pcap);
  REQUIRE(got.size() >= 5);
  const std::vector<cm::Attr> want = {cm::Attr::req, cm::Attr::req, cm::Attr::mra, cm::Attr::rep, cm::Attr::rtu};
  CHECK(std::vector<cm::Attr>(got.begin(), got.begin() + 5) == want);
}

TEST_CASE("cm: a REQ from a QP a live connection already names is stale: REJ 10, and the old one ends",
          "[cm-stale]") {
  CmPair p("cm_stale");
  CmSide& a = *p.a;
  CmSide& b = *p.b;
  REQUIRE(b.cm->listen(18522) == 0);
  auto qa = a.qp();
  auto qb = b.qp();
  // By QP number, so that a can ask again for the same QP, as a process
  // that lost its connection and got the same QPN back would.
  uint64_t first = 0;
  REQUIRE(a.cm->connect(qa->qp_num(), IBV_QPT_RC, b.addr(), 18522, {}, first) == 0);
  const cm::Event req = b.next_event();
  REQUIRE(req.type == cm::EventType::connect_request);
  REQUIRE(b.cm->accept(req.id, *qb, {}) == 0);
  REQUIRE(a.next_event().type == cm::EventType::connect_response);
  REQUIRE(a.cm->establish(first) == 0);
  REQUIRE(b.next_event().type == cm::EventType::established);

  uint64_t second = 0;
  REQUIRE(a.cm->connect(qa->qp_num(), IBV_QPT_RC, b.addr(), 18522, {}, second) == 0);
  // b: the old connection ends (its DREQ); a: the new REQ is refused, and
  // the old connection ends on its side too.
  const cm::Event gone = b.next_event();
  CHECK(gone.type == cm::EventType::disconnected);
  CHECK(gone.id == req.id);
  CHECK(qb->state() == IBV_QPS_ERR);
  bool rejected = false, disconnected = false;
  for (int i = 0; i < 2; ++i) {
    const cm::Event e = a.next_event();
    if (e.type == cm::EventType::rejected && e.id == second) rejected = e.status == 10;
    if (e.type == cm::EventType::disconnected && e.id == first) disconnected = true;
  }
  CHECK(rejected);
  CHECK(disconnected);
  qa.reset();
  qb.reset();
}

TEST_CASE("cm: a port nobody listens on is REJ reason 8; an application's reject is 28 with its data", "[cm-reject]") {
  CmPair p("cm_rej");
  CmSide& a = *p.a;
  CmSide& b = *p.b;
  auto qa = a.qp();
  uint64_t aid = 0;
  REQUIRE(a.cm->connect(*qa, b.addr(), 4420, {}, aid) == 0);
  cm::Event e = a.next_event();
  REQUIRE(e.type == cm::EventType::rejected);
  CHECK(e.id == aid);
  CHECK(e.status == 8);
  CHECK(qa->state() == IBV_QPS_ERR);

  REQUIRE(b.cm->listen(4420) == 0);
  auto qa2 = a.qp();
  REQUIRE(a.cm->connect(*qa2, b.addr(), 4420, {}, aid) == 0);
  const cm::Event req = b.next_event();
  REQUIRE(req.type == cm::EventType::connect_request);
  const uint8_t why[] = {'b', 'u', 's', 'y'};
  REQUIRE(b.cm->reject(req.id, why) == 0);
  CHECK(b.cm->accept(req.id, *b.qp(), {}) == EINVAL);  // answered already
  e = a.next_event();
  REQUIRE(e.type == cm::EventType::rejected);
  CHECK(e.status == 28);
  REQUIRE(e.private_data.size() == 148);
  CHECK(std::memcmp(e.private_data.data(), "busy", 4) == 0);

  // Refusals before anything is sent.
  auto qa3 = a.qp();
  cm::ConnParam big;
  big.private_data.resize(57);
  CHECK(a.cm->connect(*qa3, b.addr(), 4420, big, aid) == EINVAL);
  wire::IpAddr v6;
  REQUIRE(wire::IpAddr::parse("fd00::2", v6));
  CHECK(a.cm->connect(*qa3, v6, 4420, {}, aid) == EINVAL);  // no IPv6 GID here
  CHECK(a.cm->accept(12345, *qa3, {}) == EINVAL);
  std::string error;
  CHECK(cm::ConnectionManager::open(a.ep->device(), error) == nullptr);  // QP1 is taken
  CHECK_THAT(error, Catch::Contains("QP1"));
}

// What librdmacm's layer needs of the manager: QPs already in INIT, the
// active side's own port, a REQ that arrives just before its listener, and
// ids the application forgets (release) or whose QP it destroys (detach).
TEST_CASE("cm: INIT QPs, a chosen port, a REQ held for a late listener, release and detach", "[cm-release]") {
  CmPair p("cm_rel");
  CmSide& a = *p.a;
  CmSide& b = *p.b;
  auto to_init = [](QueuePair& q) {
    ibv_qp_attr at{};
    at.qp_state = IBV_QPS_INIT;
    at.port_num = 1;
    at.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
    REQUIRE(q.modify(at, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS) == 0);
  };

  // The REQ leaves before b listens; b's listen within the grace takes it.
  auto qa = a.qp();
  to_init(*qa);
  cm::ConnParam cp;
  cp.local_port = 40001;
  cp.responder_resources = 1;
  uint64_t aid = 0;
  REQUIRE(a.cm->connect(*qa, b.addr(), 5000, cp, aid) == 0);
  std::this_thread::sleep_for(20ms);
  REQUIRE(b.cm->listen(5000) == 0);
  const cm::Event req = b.next_event();
  CHECK_FALSE(req.flow_control);  // not asked for: Linux's default, perftest's
  REQUIRE(req.type == cm::EventType::connect_request);
  CHECK(req.peer_port == 40001);
  CHECK(req.local == b.addr());
  auto qb = b.qp();
  to_init(*qb);
  cm::ConnParam ap;
  ap.initiator_depth = req.initiator_depth;
  REQUIRE(b.cm->accept(req.id, *qb, ap) == 0);
  REQUIRE(a.next_event().type == cm::EventType::established);
  REQUIRE(b.next_event().type == cm::EventType::established);
  CHECK(qa->state() == IBV_QPS_RTS);
  // INIT to INIT gave the active side remote READ for its responder resources.
  ibv_qp_attr at{};
  QpInitAttr ia;
  REQUIRE(qa->query(at, IBV_QP_ACCESS_FLAGS, ia) == 0);
  CHECK((at.qp_access_flags & IBV_ACCESS_REMOTE_READ) != 0);

  // b's QP is about to go: once detached, a's DREQ leaves it alone, and b
  // still hears of the disconnection.
  b.cm->detach_qp(*qb);
  REQUIRE(a.cm->disconnect(aid) == 0);
  REQUIRE(b.next_event().type == cm::EventType::disconnected);
  CHECK(qb->state() == IBV_QPS_RTS);
  REQUIRE(a.next_event().type == cm::EventType::disconnected);

  // A request the application forgets is rejected (28) for the peer, and
  // the forgotten id reports nothing more.
  auto qa2 = a.qp();
  REQUIRE(a.cm->connect(*qa2, b.addr(), 5000, {}, aid) == 0);
  const cm::Event req2 = b.next_event();
  REQUIRE(req2.type == cm::EventType::connect_request);
  REQUIRE(b.cm->release(req2.id) == 0);
  cm::Event e = a.next_event();
  REQUIRE(e.type == cm::EventType::rejected);
  CHECK(e.status == 28);
  CHECK(b.cm->release(req2.id) == EINVAL);

  // An established connection the application forgets is disconnected.
  auto qa3 = a.qp();
  REQUIRE(a.cm->connect(*qa3, b.addr(), 5000, {}, aid) == 0);
  const cm::Event req3 = b.next_event();
  auto qb3 = b.qp();
  REQUIRE(b.cm->accept(req3.id, *qb3, {}) == 0);
  REQUIRE(a.next_event().type == cm::EventType::established);
  REQUIRE(b.next_event().type == cm::EventType::established);
  REQUIRE(b.cm->release(req3.id) == 0);
  e = a.next_event();
  REQUIRE(e.type == cm::EventType::disconnected);
  CHECK(e.id == aid);
  CHECK(qa3->state() == IBV_QPS_ERR);
  std::this_thread::sleep_for(100ms);
  CHECK_FALSE(b.cm->get_event(e));  // nothing about the released id

  // A request its requester withdraws before it is answered (REJ 4 with the
  // requester's CA GUID, and no comm ID of b's, which a never learned): b
  // hears REJECTED, as from Linux, and can no longer accept it.
  auto qa4 = a.qp();
  REQUIRE(a.cm->connect(*qa4, b.addr(), 5000, {}, aid) == 0);
  const cm::Event req4 = b.next_event();
  REQUIRE(req4.type == cm::EventType::connect_request);
  REQUIRE(a.cm->release(aid) == 0);
  e = b.next_event();
  CHECK(e.type == cm::EventType::rejected);
  CHECK(e.id == req4.id);
  CHECK(e.status == 4);
  auto qb4 = b.qp();
  CHECK(b.cm->accept(req4.id, *qb4, {}) != 0);
}

TEST_CASE("cm: requests nobody answers are bounded: past 4096, REJ 3 (no resources)", "[cm-limits]") {
  CmPair p("cm_limits");
  CmSide& a = *p.a;
  CmSide& b = *p.b;
  REQUIRE(b.cm->listen(5001) == 0);
  // By number: the QPs need not exist for the exchange up to the REP.
  constexpr uint32_t kPending = 4096;
  uint64_t id = 0;
  for (uint32_t i = 0; i < kPending; i += 32) {
    for (uint32_t j = i; j < i + 32; ++j) REQUIRE(a.cm->connect(0x1000 + j, IBV_QPT_RC, b.addr(), 5001, {}, id) == 0);
    for (uint32_t j = i; j < i + 32; ++j) REQUIRE(b.next_event().type == cm::EventType::connect_request);
  }
  REQUIRE(a.cm->connect(0x1000 + kPending, IBV_QPT_RC, b.addr(), 5001, {}, id) == 0);
  const cm::Event e = a.next_event();
  CHECK(e.type == cm::EventType::rejected);
  CHECK(e.id == id);
  CHECK(e.status == 3);
  cm::Event none;
  CHECK_FALSE(b.cm->get_event(none));
}

TEST_CASE("cm: the library's threads take no signal sent to the process", "[cm-signals]") {
  // A handler that calls exit() (PSM's for SIGTERM, say) run on the engine
  // or manager thread would have the exit handlers join that very thread:
  // the library's threads block the signals that end a process, so the
  // kernel hands them to an application thread. (DPDK's are blocked by
  // uroce's eal_init; this program's main starts the EAL itself.)
  CmPair p("cm_sig");
  const pid_t self = getpid();
  int others = 0;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    const std::string tid = task.path().filename();
    if (tid == std::to_string(self)) continue;
    std::ifstream status(task.path() / "status");
    std::string line, blocked;
    while (std::getline(status, line))
      if (line.rfind("SigBlk:", 0) == 0) blocked = line.substr(7);
    std::ifstream comm(task.path() / "comm");
    std::string name;
    std::getline(comm, name);
    if (name.rfind("uroce-", 0) != 0) continue;
    const uint64_t mask = std::stoull(blocked, nullptr, 16);
    INFO("thread " << tid << " (" << name << "), SigBlk " << blocked);
    for (int sig : {SIGINT, SIGTERM, SIGHUP}) CHECK((mask >> (sig - 1) & 1) == 1);
    ++others;
  }
  // Two engines and two managers.
  CHECK(others >= 4);
}

}  // namespace uroce::test
