// SPDX-License-Identifier: BSD-3-Clause
#include "rx_sleep.h"

#include <rte_ethdev.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>

#include "uroce/port/dpdk_port.h"

namespace uroce::dpdk {

RxSleep::RxSleep(uint16_t port, uint16_t queue) : port_(port), queue_(queue) {
  epfd_ = epoll_create1(EPOLL_CLOEXEC);
  if (epfd_ < 0) return;
  if (rte_eth_dev_rx_intr_ctl_q(port_, queue_, epfd_, RTE_INTR_EVENT_ADD, nullptr) != 0) {
    close(epfd_);
    epfd_ = -1;
  }
}

RxSleep::~RxSleep() {
  if (epfd_ < 0) return;
  // Out of the port's interrupt list before the instance goes: closing the
  // port would otherwise try to remove it from a closed descriptor.
  rte_eth_dev_rx_intr_ctl_q(port_, queue_, epfd_, RTE_INTR_EVENT_DEL, nullptr);
  close(epfd_);
}

bool RxSleep::sleep(uint64_t ns, int wake_fd) {
  if (epfd_ < 0 || wake_fd < 0) return false;
  if (wake_fd != wake_fd_) {
    if (wake_fd_ >= 0) rte_epoll_ctl(epfd_, EPOLL_CTL_DEL, wake_fd_, &wake_ev_);
    wake_ev_ = rte_epoll_event{};
    wake_ev_.epdata.event = EPOLLIN;
    if (rte_epoll_ctl(epfd_, EPOLL_CTL_ADD, wake_fd, &wake_ev_) != 0) {
      wake_fd_ = -1;
      return false;
    }
    wake_fd_ = wake_fd;
  }
  // A PMD whose queue descriptor is itself the interrupt (net_tap: readable
  // while frames wait) has nothing to arm.
  const int armed = rte_eth_dev_rx_intr_enable(port_, queue_);
  if (armed != 0 && armed != -ENOTSUP) return false;
  rte_epoll_event ev[2];
  const int ms = int(std::clamp<uint64_t>(ns / 1'000'000, 1, INT_MAX));
  const int n = rte_epoll_wait(epfd_, ev, 2, ms);
  if (armed == 0) rte_eth_dev_rx_intr_disable(port_, queue_);
  // A wait that failed did not sleep: the caller naps instead of spinning.
  if (n < 0) return false;
  for (int i = 0; i < n; ++i)
    if (ev[i].fd != wake_fd_) frame_wakeups_.fetch_add(1, std::memory_order_relaxed);
  return true;
}

}  // namespace uroce::dpdk

namespace uroce {

bool DpdkPort::rx_sleep(uint64_t ns, int wake_fd) { return rx_sleep_ && rx_sleep_->sleep(ns, wake_fd); }

uint64_t DpdkPort::rx_interrupt_wakeups() const { return rx_sleep_ ? rx_sleep_->frame_wakeups() : 0; }

}  // namespace uroce
