// SPDX-License-Identifier: BSD-3-Clause
// A listener destroyed while a connection request for it waits unread on
// its channel: the request dies with it, as on Linux, and the peer hears
// REJ 28 (consumer defined) instead of waiting for an answer; the channel
// has nothing more to hand out. One device, connecting to its own address
// (the engine loops such packets back). On a null port (UROCE_DEV); prints
// "ok".
#include <fcntl.h>

#include "rdmacm_test_util.h"

using namespace uroce::test;

int main() {
  rdma_event_channel* lch = rdma_create_event_channel();
  rdma_event_channel* ach = rdma_create_event_channel();
  if (!lch || !ach) die("rdma_create_event_channel");
  const sockaddr_in local = addr("10.0.0.1", 7991);
  rdma_cm_id* listener = listen_at(lch, local);

  rdma_cm_id* active = nullptr;
  if (rdma_create_id(ach, &active, nullptr, RDMA_PS_TCP) != 0) die("rdma_create_id(active)");
  connect_id(ach, active, local);

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
