// SPDX-License-Identifier: BSD-3-Clause
// What the ping-pong loops (run.h, srq_run.h) share: a progress line for
// long runs, and the last engine turns after a run.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

#include "uroce/verbs/verbs.h"

namespace uroce::pingpong {

using Clock = std::chrono::steady_clock;

// Runs the engine once; returns the work done (0 = idle).
using PollFn = std::function<int()>;

// A line on stderr every 2 s once a run has lasted 3 s, so a long run
// shows it is alive without cluttering short ones.
class Progress {
 public:
  explicit Progress(uint32_t iters) : iters_(iters), start_(Clock::now()), next_(start_ + std::chrono::seconds(3)) {}
  void update(Clock::time_point now, uint32_t done);

 private:
  uint32_t iters_;
  Clock::time_point start_, next_;
};

// -e: what the examples do when a poll of the CQ finds nothing, with
// ibv_req_notify_cq and ibv_get_cq_event: the first empty poll arms the CQ
// and polls again (a completion may have come before the arming); the next
// sleeps on the channel until the CQ's event, acknowledges it, and polls.
// The device's engine runs on its own thread meanwhile (session.cpp).
class EventWait {
 public:
  EventWait(CompletionChannel& channel, CompletionQueue& cq) : channel_(channel), cq_(cq) {}
  // False with a message on failure, or when no event came within `limit`.
  bool idle(std::chrono::milliseconds limit, std::string& error);

 private:
  CompletionChannel& channel_;
  CompletionQueue& cq_;
  bool armed_ = false;
};

// Runs the engine until it has nothing left to do (at most ~50 ms): our
// last ACK may still be queued when the last completion arrives, and the
// peer's last SEND completes only when that ACK reaches it.
void drain(const PollFn& poll);

}  // namespace uroce::pingpong
