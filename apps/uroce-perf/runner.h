// SPDX-License-Identifier: BSD-3-Clause
// The measured loops. Both endpoints may live in this process (loopback):
// `poll` runs the engines, whatever drives them.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "endpoint.h"
#include "options.h"

namespace uroce::perf {

using PollFn = std::function<void()>;

struct BwResult {
  uint64_t size = 0;
  uint64_t iters = 0;      // completed messages, all QPs
  std::vector<uint64_t> per_qp;  // completed messages of each QP
  double seconds = 0;
  double peak_bps = 0;     // bytes per second
  double avg_bps = 0;
  double msg_rate = 0;     // messages per second
  // -b: what this side sent (local) and what the peer sent to it (remote);
  // the rates above are their sum and `iters` this side's count, as
  // perftest reports.
  bool bidirectional = false;
  uint64_t local_iters = 0, remote_iters = 0;
  double local_peak_bps = 0, remote_peak_bps = 0;
  double local_avg_bps = 0, remote_avg_bps = 0, local_msg_rate = 0, remote_msg_rate = 0;
  std::string error;       // a WC error or a verification failure
  uint64_t lost = 0;       // UD: messages sent that never arrived
};

// perftest's measure: the TSC at each of the client's posts. A sample is
// the gap between two posts (iters - 1 of them), halved where a post
// answers the peer's (SEND, WRITE, raw), whole for READ and atomics.
struct LatResult {
  uint64_t size = 0;
  uint64_t iters = 0;            // round trips run (-D: those between the margins)
  std::vector<uint64_t> posted;  // TSC at each post; empty with -D
  uint64_t window_cycles = 0;    // -D: the time the counted round trips took
  std::string error;
  uint64_t ack_frames = 0;   // raw_lat --raw-acks: ACK-sized frames received
};


// Deterministic, position-dependent bytes for --verify.
void fill_pattern(uint8_t* p, uint64_t n, uint32_t seed);
bool check_pattern(const uint8_t* p, uint64_t n, uint32_t seed, std::string& error);

}  // namespace uroce::perf
