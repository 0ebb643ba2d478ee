// SPDX-License-Identifier: BSD-3-Clause
// The ping-pong itself, as rc_pingpong's (and ud_pingpong's) main loop:
// the client sends first; each side posts its next SEND once both its
// previous SEND and a RECV have completed, and refills the receive queue
// when it runs low.
#pragma once

#include <functional>
#include <string>

#include "endpoint.h"
#include "loop_support.h"
#include "options.h"

namespace uroce::pingpong {

struct RunResult {
  float usec = 0;            // gettimeofday from the first send to the last completion
  std::string error;         // WC error, post failure, stalled peer
  uint32_t mismatches = 0;   // --chk: messages that did not hold their pattern
  std::string first_mismatch;
};

// `routs`: receives already posted.
RunResult run_pingpong(Endpoint& ctx, const PollFn& poll, const Options& o, bool client, int routs);

}  // namespace uroce::pingpong
