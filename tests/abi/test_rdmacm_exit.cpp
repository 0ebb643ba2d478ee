// SPDX-License-Identifier: BSD-3-Clause
// rdma_cm calls made after the drop-in librdmacm's own exit handler has
// released the connections and closed the managers, as a program's exit
// handler registered before its first rdma_cm call runs (atexit is LIFO):
// they fail or succeed cleanly instead of reaching a manager that is gone,
// and so does rdma_destroy_qp after the drop-in libibverbs closed the device.
// On a null port (UROCE_DEV); prints "ok" from the late handler.
#include "rdmacm_test_util.h"

using namespace uroce::test;

namespace {

rdma_event_channel* channel;
rdma_cm_id* listener;
rdma_cm_id* active;

void late() {
  errno = 0;
  if (rdma_disconnect(active) == 0 || errno != ENODEV) die("rdma_disconnect after exit: not ENODEV");
  rdma_destroy_qp(active);  // the drop-in libibverbs's exit handler ran too
  // And the QP's CQ and completion channel, which rdma_create_qp made.
  if (ibv_destroy_cq(active->recv_cq) != 0) die("ibv_destroy_cq after exit");
  if (ibv_destroy_comp_channel(active->recv_cq_channel) != 0) die("ibv_destroy_comp_channel after exit");
  if (rdma_destroy_id(active) != 0) die("rdma_destroy_id(active) after exit");
  if (rdma_destroy_id(listener) != 0) die("rdma_destroy_id(listener) after exit");
  rdma_destroy_event_channel(channel);
  std::printf("ok: rdma_cm calls after the library's exit handler\n");
  std::fflush(stdout);
}

}  // namespace

int main() {
  std::atexit(late);
  channel = rdma_create_event_channel();
  if (!channel) die("rdma_create_event_channel");
  if (rdma_create_id(channel, &listener, nullptr, RDMA_PS_TCP) != 0) die("rdma_create_id");
  sockaddr_in local = addr("10.0.0.1", 7999);
  if (rdma_bind_addr(listener, reinterpret_cast<sockaddr*>(&local)) != 0) die("rdma_bind_addr");
  if (rdma_listen(listener, 1) != 0) die("rdma_listen");

  // A connection under way, to the listener (the device's own address:
  // the engine loops it back), that nobody accepts.
  if (rdma_create_id(channel, &active, nullptr, RDMA_PS_TCP) != 0) die("rdma_create_id(active)");
  connect_id(channel, active, addr("10.0.0.1", 7999));
  return 0;  // exit: the library's handler, then late()
}
