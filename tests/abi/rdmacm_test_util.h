// SPDX-License-Identifier: BSD-3-Clause
// What the rdma_cm programs of tests/abi share: failing with a line, IPv4
// addresses, waiting for a channel's next event.
#pragma once

#include <rdma/rdma_cma.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>

namespace uroce::test {

// "FAIL: WHAT (errno N)" on stdout, then exit 1 without exit handlers.
[[noreturn]] inline void die(const char* what) {
  std::printf("FAIL: %s (errno %d)\n", what, errno);
  std::fflush(stdout);
  _exit(1);
}

inline sockaddr_in addr(const char* ip, uint16_t port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  inet_pton(AF_INET, ip, &a.sin_addr);
  return a;
}

inline bool readable(int fd, int ms) {
  pollfd p{fd, POLLIN, 0};
  return poll(&p, 1, ms) == 1;
}

// The channel's next event, which must be of `type`, within 5 s.
inline rdma_cm_event* expect(rdma_event_channel* ch, rdma_cm_event_type type) {
  rdma_cm_event* e = nullptr;
  if (!readable(ch->fd, 5000)) die("no event within 5 s");
  if (rdma_get_cm_event(ch, &e) != 0) die("rdma_get_cm_event");
  if (e->event != type) {
    std::printf("FAIL: %s (status %d), wanted %s\n", rdma_event_str(e->event), e->status, rdma_event_str(type));
    std::fflush(stdout);
    _exit(1);
  }
  return e;
}

// A small RC QP on `id`, its CQs made by rdma_create_qp.
inline void small_rc_qp(rdma_cm_id* id) {
  ibv_qp_init_attr qa{};
  qa.qp_type = IBV_QPT_RC;
  qa.cap.max_send_wr = qa.cap.max_recv_wr = 4;
  qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
  if (rdma_create_qp(id, nullptr, &qa) != 0) die("rdma_create_qp");
}

// A listener on `local`, its events on `ch`.
inline rdma_cm_id* listen_at(rdma_event_channel* ch, sockaddr_in local) {
  rdma_cm_id* listener = nullptr;
  if (rdma_create_id(ch, &listener, nullptr, RDMA_PS_TCP) != 0) die("rdma_create_id");
  if (rdma_bind_addr(listener, reinterpret_cast<sockaddr*>(&local)) != 0) die("rdma_bind_addr");
  if (rdma_listen(listener, 1) != 0) die("rdma_listen");
  return listener;
}

// Makes a small RC QP on the resolved `id` and sends the REQ.
inline void qp_and_connect(rdma_cm_id* id) {
  small_rc_qp(id);
  rdma_conn_param p{};
  if (rdma_connect(id, &p) != 0) die("rdma_connect");
}

// Resolves `id` towards `to` (its events on `ch`), then qp_and_connect.
inline void connect_id(rdma_event_channel* ch, rdma_cm_id* id, sockaddr_in to) {
  if (rdma_resolve_addr(id, nullptr, reinterpret_cast<sockaddr*>(&to), 1000) != 0) die("rdma_resolve_addr");
  rdma_ack_cm_event(expect(ch, RDMA_CM_EVENT_ADDR_RESOLVED));
  if (rdma_resolve_route(id, 1000) != 0) die("rdma_resolve_route");
  rdma_ack_cm_event(expect(ch, RDMA_CM_EVENT_ROUTE_RESOLVED));
  qp_and_connect(id);
}

}  // namespace uroce::test
