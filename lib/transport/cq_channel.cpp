// SPDX-License-Identifier: BSD-3-Clause
#include "transport/cq_channel.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>

#include "transport/cq.h"

namespace uroce::transport {

CqChannel::~CqChannel() {
  if (fd_ >= 0) close(fd_);
}

bool CqChannel::open() {
  fd_ = eventfd(0, EFD_SEMAPHORE | EFD_CLOEXEC);
  return fd_ >= 0;
}

void CqChannel::signal(Cq& cq) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (cq.events_queued++ == 0) {
      cq.event_next = nullptr;
      (tail_ ? tail_->event_next : head_) = &cq;
      tail_ = &cq;
    }
  }
  const uint64_t one = 1;
  // Cannot fail short of 2^64 - 2 unread events.
  [[maybe_unused]] const ssize_t w = write(fd_, &one, sizeof one);
}

bool CqChannel::has_event() {
  std::lock_guard<std::mutex> lock(mu_);
  return head_ != nullptr;
}

int CqChannel::consume() {
  uint64_t v;
  return read(fd_, &v, sizeof v) == ssize_t(sizeof v) ? 0 : errno;
}

Cq* CqChannel::take() {
  std::lock_guard<std::mutex> lock(mu_);
  Cq* cq = head_;
  if (cq == nullptr) return nullptr;
  ++cq->events_handed;
  if (--cq->events_queued == 0) {
    head_ = cq->event_next;
    if (head_ == nullptr) tail_ = nullptr;
    cq->event_next = nullptr;
  }
  return cq;
}

void CqChannel::ack(Cq& cq, uint32_t n) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    cq.events_acked += n;
  }
  acked_.notify_all();
}

void CqChannel::wait_acked(Cq& cq) {
  std::unique_lock<std::mutex> lock(mu_);
  // As ibv_destroy_cq: an event handed out must be acknowledged first.
  acked_.wait(lock, [&] { return cq.events_acked >= cq.events_handed; });
}

void CqChannel::detach(Cq& cq) {
  uint32_t dropped = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (cq.events_queued != 0) {
      Cq* prev = nullptr;
      for (Cq* c = head_; c != nullptr; prev = c, c = c->event_next)
        if (c == &cq) {
          (prev ? prev->event_next : head_) = cq.event_next;
          if (tail_ == &cq) tail_ = prev;
          break;
        }
      dropped = cq.events_queued;
      cq.events_queued = 0;
    }
  }
  // Take the dropped events' counts off the descriptor where still there
  // (a reader may have consumed one and be about to find the queue empty:
  // it then reads again).
  for (; dropped > 0; --dropped) {
    pollfd p{fd_, POLLIN, 0};
    if (poll(&p, 1, 0) != 1) break;
    uint64_t v;
    if (read(fd_, &v, sizeof v) != ssize_t(sizeof v)) break;
  }
  --users_;
}

}  // namespace uroce::transport
