// SPDX-License-Identifier: BSD-3-Clause
// A listener destroyed while a connection request for it waits unread on
// its channel: the request dies with it, as on Linux, and the peer hears
// REJ 28 (consumer defined) instead of waiting for an answer; the channel
// has nothing more to hand out. One device, connecting to its own address
// (the engine loops such packets back). On a null port (UROCE_DEV); prints
// "ok".
#include <rdma/rdma_cma.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>

namespace {

[[noreturn]] void die(const char* what) {
  std::printf("FAIL: %s (errno %d)\n", what, errno);
  std::fflush(stdout);
  _exit(1);
}

sockaddr_in addr(const char* ip, uint16_t port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  inet_pton(AF_INET, ip, &a.sin_addr);
  return a;
}

bool readable(int fd, int ms) {
  pollfd p{fd, POLLIN, 0};
  return poll(&p, 1, ms) == 1;
}

rdma_cm_event* expect(rdma_event_channel* ch, rdma_cm_event_type type) {
  rdma_cm_event* e = nullptr;
  if (!readable(ch->fd, 5000)) die("no event within 5 s");
  if (rdma_get_cm_event(ch, &e) != 0) die("rdma_get_cm_event");
  if (e->event != type) {
    std::printf("FAIL: %s (status %d), wanted %s\n", rdma_event_str(e->event), e->status, rdma_event_str(type));
    std::exit(1);
  }
  return e;
}

}  // namespace

int main() {
  rdma_event_channel* lch = rdma_create_event_channel();
  rdma_event_channel* ach = rdma_create_event_channel();
  if (!lch || !ach) die("rdma_create_event_channel");
  rdma_cm_id* listener = nullptr;
  if (rdma_create_id(lch, &listener, nullptr, RDMA_PS_TCP) != 0) die("rdma_create_id");
  sockaddr_in local = addr("10.0.0.1", 7991);
  if (rdma_bind_addr(listener, reinterpret_cast<sockaddr*>(&local)) != 0) die("rdma_bind_addr");
  if (rdma_listen(listener, 1) != 0) die("rdma_listen");

  rdma_cm_id* active = nullptr;
  if (rdma_create_id(ach, &active, nullptr, RDMA_PS_TCP) != 0) die("rdma_create_id(active)");
  if (rdma_resolve_addr(active, nullptr, reinterpret_cast<sockaddr*>(&local), 1000) != 0) die("rdma_resolve_addr");
  rdma_ack_cm_event(expect(ach, RDMA_CM_EVENT_ADDR_RESOLVED));
  if (rdma_resolve_route(active, 1000) != 0) die("rdma_resolve_route");
  rdma_ack_cm_event(expect(ach, RDMA_CM_EVENT_ROUTE_RESOLVED));
  ibv_qp_init_attr qa{};
  qa.qp_type = IBV_QPT_RC;
  qa.cap.max_send_wr = qa.cap.max_recv_wr = 4;
  qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
  if (rdma_create_qp(active, nullptr, &qa) != 0) die("rdma_create_qp");
  rdma_conn_param p{};
  if (rdma_connect(active, &p) != 0) die("rdma_connect");

  // The request waits on the listener's channel, unread; the listener goes.
  if (!readable(lch->fd, 5000)) die("no connection request within 5 s");
  if (rdma_destroy_id(listener) != 0) die("rdma_destroy_id(listener)");
  rdma_cm_event* e = expect(ach, RDMA_CM_EVENT_REJECTED);
  if (e->status != 28) {
    std::printf("FAIL: REJECTED with reason %d, wanted 28\n", e->status);
    return 1;
  }
  rdma_ack_cm_event(e);
  // Nothing is left for the listener's channel to hand out.
  fcntl(lch->fd, F_SETFL, fcntl(lch->fd, F_GETFL) | O_NONBLOCK);
  rdma_cm_event* left = nullptr;
  if (rdma_get_cm_event(lch, &left) == 0) die("the destroyed listener's request was still handed out");
  if (errno != EAGAIN) die("rdma_get_cm_event on the emptied channel: not EAGAIN");
  rdma_destroy_qp(active);
  rdma_destroy_id(active);
  rdma_destroy_event_channel(lch);
  rdma_destroy_event_channel(ach);
  std::printf("ok: a listener destroyed with a request unread: the peer gets REJ 28\n");
  return 0;
}
