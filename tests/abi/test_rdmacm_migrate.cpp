// SPDX-License-Identifier: BSD-3-Clause
// rdma_migrate_id with events still queued, not yet handed out: they move
// to the new channel with the id, as Linux moves them (ucma_move_events),
// a listener's connection requests included, and the old channel hands
// out nothing more. One device, connecting to its own address. On a null
// port (UROCE_DEV); prints "ok".
#include <fcntl.h>

#include "rdmacm_test_util.h"

using namespace uroce::test;

namespace {

void expect_empty(rdma_event_channel* ch) {
  fcntl(ch->fd, F_SETFL, fcntl(ch->fd, F_GETFL) | O_NONBLOCK);
  rdma_cm_event* e = nullptr;
  if (rdma_get_cm_event(ch, &e) == 0) die("the old channel still handed out an event");
  if (errno != EAGAIN) die("rdma_get_cm_event on the old channel: not EAGAIN");
}

}  // namespace

int main() {
  rdma_event_channel* a = rdma_create_event_channel();
  rdma_event_channel* b = rdma_create_event_channel();
  rdma_event_channel* c = rdma_create_event_channel();
  if (!a || !b || !c) die("rdma_create_event_channel");

  // ADDR_RESOLVED queued on a, unread, when the id moves to b.
  rdma_cm_id* active = nullptr;
  if (rdma_create_id(a, &active, nullptr, RDMA_PS_TCP) != 0) die("rdma_create_id");
  sockaddr_in local = addr("10.0.0.1", 7992);
  if (rdma_resolve_addr(active, nullptr, reinterpret_cast<sockaddr*>(&local), 1000) != 0) die("rdma_resolve_addr");
  if (!readable(a->fd, 5000)) die("no ADDR_RESOLVED on the first channel");
  if (rdma_migrate_id(active, b) != 0) die("rdma_migrate_id");
  rdma_cm_event* e = expect(b, RDMA_CM_EVENT_ADDR_RESOLVED);
  if (e->id != active) die("the moved event names another id");
  rdma_ack_cm_event(e);
  expect_empty(a);

  // A connection request queued for a listener on c, unread, when the
  // listener moves to a.
  rdma_cm_id* listener = nullptr;
  if (rdma_create_id(c, &listener, nullptr, RDMA_PS_TCP) != 0) die("rdma_create_id(listener)");
  if (rdma_bind_addr(listener, reinterpret_cast<sockaddr*>(&local)) != 0) die("rdma_bind_addr");
  if (rdma_listen(listener, 1) != 0) die("rdma_listen");
  if (rdma_resolve_route(active, 1000) != 0) die("rdma_resolve_route");
  rdma_ack_cm_event(expect(b, RDMA_CM_EVENT_ROUTE_RESOLVED));
  qp_and_connect(active);
  if (!readable(c->fd, 5000)) die("no connection request on the listener's channel");
  if (rdma_migrate_id(listener, a) != 0) die("rdma_migrate_id(listener)");
  e = expect(a, RDMA_CM_EVENT_CONNECT_REQUEST);
  if (e->listen_id != listener) die("the moved request names another listener");
  rdma_cm_id* child = e->id;
  rdma_ack_cm_event(e);
  expect_empty(c);
  if (rdma_reject(child, nullptr, 0) != 0) die("rdma_reject");
  rdma_ack_cm_event(expect(b, RDMA_CM_EVENT_REJECTED));
  rdma_destroy_id(child);
  rdma_destroy_qp(active);
  rdma_destroy_id(active);
  rdma_destroy_id(listener);
  std::printf("ok: queued events move with rdma_migrate_id, a listener's requests too\n");
  return 0;
}
