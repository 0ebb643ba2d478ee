// SPDX-License-Identifier: BSD-3-Clause
// The core of a completion channel: a queue of CQ events and the file
// descriptor that is readable while the queue holds one.
//
// The descriptor is an eventfd in semaphore mode (EFD_SEMAPHORE): each
// event adds one to its counter and each read takes one, so it is readable
// exactly while events wait, one descriptor (a pipe needs two) and no
// buffer to fill. An application may set O_NONBLOCK on it; get_event then
// answers EAGAIN instead of blocking, as ibv_get_cq_event does.
//
// Signalling takes the mutex and writes the eventfd: once per arming of a
// CQ, never per completion.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>

namespace uroce::transport {

class Cq;

class CqChannel {
 public:
  CqChannel() = default;
  ~CqChannel();
  CqChannel(const CqChannel&) = delete;
  CqChannel& operator=(const CqChannel&) = delete;
  // False with errno set if the eventfd cannot be made.
  bool open();
  int fd() const { return fd_; }

  // Engine side: cq fired.
  void signal(Cq& cq);
  // True if an event waits (to be taken with take()).
  bool has_event();
  // Reads one count off the eventfd: blocks unless the descriptor is
  // O_NONBLOCK. 0, or an errno (EAGAIN, EINTR).
  int consume();
  // The oldest event's CQ, counted as handed out; nullptr if the queue is
  // empty (its event belonged to a CQ destroyed meanwhile).
  Cq* take();
  void ack(Cq& cq, uint32_t n);
  // Destroying a CQ: first wait until every event handed out is
  // acknowledged, then (the engine stopped or parked) drop its queued
  // events and their counts on the eventfd.
  void wait_acked(Cq& cq);
  void detach(Cq& cq);
  uint32_t users() const { return users_; }
  void attach() { ++users_; }

 private:
  std::mutex mu_;
  std::condition_variable acked_;
  Cq* head_ = nullptr;  // CQs with queued events, oldest first
  Cq* tail_ = nullptr;
  int fd_ = -1;
  uint32_t users_ = 0;  // CQs created with this channel, guarded by the device's control lock
};

}  // namespace uroce::transport
