// SPDX-License-Identifier: BSD-3-Clause
// An event channel destroyed while another thread handles the last event it
// took and then comes back to wait for the next, as Debian 12's rping does
// at its end: the thread's rdma_get_cm_event waits, as it would on Linux
// (a read() that close() does not wake), and does not fail with EBADF or
// read freed memory. On a null port (UROCE_DEV); prints "ok".
#include <atomic>
#include <thread>

#include "rdmacm_test_util.h"

using namespace uroce::test;

namespace {

rdma_event_channel* channel;
std::atomic<int> stage{0};  // 1: took and acked the event; 2: came back; 3: returned

void event_thread() {
  rdma_cm_event* ev = nullptr;
  if (rdma_get_cm_event(channel, &ev) != 0 || ev->event != RDMA_CM_EVENT_ADDR_RESOLVED) die("ADDR_RESOLVED");
  rdma_ack_cm_event(ev);
  stage = 1;
  // Handling it takes a while; the main thread destroys the channel meanwhile.
  usleep(200000);
  stage = 2;
  const int rc = rdma_get_cm_event(channel, &ev);
  std::printf("FAIL: rdma_get_cm_event on the destroyed channel returned %d (errno %d)\n", rc, errno);
  std::fflush(stdout);
  stage = 3;
}

}  // namespace

int main() {
  channel = rdma_create_event_channel();
  if (!channel) die("rdma_create_event_channel");
  rdma_cm_id* id = nullptr;
  if (rdma_create_id(channel, &id, nullptr, RDMA_PS_TCP) != 0) die("rdma_create_id");
  std::thread t(event_thread);
  t.detach();
  sockaddr_in peer = addr("10.0.0.1", 7999);  // its own: resolved at once
  if (rdma_resolve_addr(id, nullptr, reinterpret_cast<sockaddr*>(&peer), 1000) != 0) die("rdma_resolve_addr");
  while (stage.load() < 1) usleep(1000);
  if (rdma_destroy_id(id) != 0) die("rdma_destroy_id");
  rdma_destroy_event_channel(channel);
  // The thread comes back and must still be waiting a while later.
  while (stage.load() < 2) usleep(1000);
  usleep(300000);
  if (stage.load() != 2) die("the thread's rdma_get_cm_event returned");
  std::printf("ok: a thread coming back to a destroyed channel waits\n");
  std::fflush(stdout);
  return 0;
}
