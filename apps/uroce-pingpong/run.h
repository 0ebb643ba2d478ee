// The ping-pong itself, as rc_pingpong's main loop and parse_single_wc:
// the client sends first; each side posts its next SEND once both its
// previous SEND and a RECV have completed, and refills the receive queue
// when it runs low.
#pragma once

#include <functional>
#include <string>

#include "context.h"
#include "options.h"

namespace uroce::pingpong {

// Runs the engine once; returns the work done (0 = idle).
using PollFn = std::function<int()>;

struct RunResult {
  float usec = 0;            // gettimeofday from the first send to the last completion
  std::string error;         // WC error, post failure, stalled peer
  uint32_t mismatches = 0;   // --chk: messages that did not hold their pattern
  std::string first_mismatch;
};

// `routs`: receives already posted.
RunResult run_pingpong(Context& ctx, const PollFn& poll, const Options& o, bool client, int routs);

}  // namespace uroce::pingpong
