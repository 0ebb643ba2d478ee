// SPDX-License-Identifier: BSD-3-Clause
#include "loop_support.h"

#include <poll.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace uroce::pingpong {

void Progress::update(Clock::time_point now, uint32_t done) {
  if (now < next_) return;
  next_ = now + std::chrono::seconds(2);
  std::fprintf(stderr, "uroce-pingpong: %u/%u iterations, %.1f s\n", done, iters_,
               std::chrono::duration<double>(now - start_).count());
}

bool EventWait::idle(std::chrono::milliseconds limit, std::string& error) {
  if (!armed_) {
    if (int e = cq_.req_notify(false)) return error = std::string("couldn't request CQ notification: ") + std::strerror(e), false;
    armed_ = true;
    return true;
  }
  // Sleeps in poll(2) rather than in get_event alone, so that a peer that
  // stopped answering ends the run at --timeout as it does when polling.
  pollfd p{channel_.fd(), POLLIN, 0};
  const int n = ::poll(&p, 1, int(limit.count()));
  if (n < 0 && errno == EINTR) return true;
  if (n <= 0) return error = "no completion event for " + std::to_string(limit.count() / 1000.0).substr(0, 4) +
                             " s: the peer stopped answering", false;
  CompletionQueue* ev_cq = nullptr;
  if (int e = channel_.get_event(ev_cq)) return error = std::string("failed to get cq_event: ") + std::strerror(e), false;
  if (ev_cq != &cq_) return error = "CQ event for unknown CQ", false;
  ev_cq->ack_events(1);
  armed_ = false;
  return true;
}

void drain(const PollFn& poll) {
  const auto deadline = Clock::now() + std::chrono::milliseconds(50);
  for (int quiet = 0; quiet < 64 && Clock::now() < deadline;) quiet = poll() ? 0 : quiet + 1;
}

}  // namespace uroce::pingpong
