// SPDX-License-Identifier: BSD-3-Clause
// An idle engine thread's sleep on a receive queue's interrupt: one epoll
// instance holds the queue's interrupt (registered through ethdev, so
// that DPDK clears it the way its type needs) and the thread's wake-up
// eventfd. Used by the engine thread only.
#pragma once

#include <rte_epoll.h>

#include <atomic>
#include <cstdint>

namespace uroce::dpdk {

class RxSleep {
 public:
  // nullptr-like failure is reported by ok(): the queue has no interrupt.
  RxSleep(uint16_t port, uint16_t queue);
  ~RxSleep();
  RxSleep(const RxSleep&) = delete;
  RxSleep& operator=(const RxSleep&) = delete;

  bool ok() const { return epfd_ >= 0; }
  // See PacketPort::rx_sleep. Waits in whole milliseconds (at least one).
  bool sleep(uint64_t ns, int wake_fd);
  uint64_t frame_wakeups() const { return frame_wakeups_.load(std::memory_order_relaxed); }

 private:
  uint16_t port_, queue_;
  int epfd_ = -1;
  int wake_fd_ = -1;            // registered in epfd_ as wake_ev_
  rte_epoll_event wake_ev_{};  // must live while registered
  std::atomic<uint64_t> frame_wakeups_{0};
};

}  // namespace uroce::dpdk
