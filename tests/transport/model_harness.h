// SPDX-License-Identifier: BSD-3-Clause
// Runs a model scenario on real devices: a SimFabric with one device per
// scenario device, one registered region each, the QP pairs connected the
// verbs way, receives and sends posted in random chunks interleaved with
// random slices of virtual time, then every completion collected and the
// result compared with the model's prediction.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model.h"
#include "uroce/sim/link_faults.h"
#include "uroce/sim/sim_counters.h"
#include "uroce/verbs/counters.h"

namespace uroce::test::model {

struct HarnessOptions {
  sim::LinkFaults faults;           // on every link
  uint64_t max_slice_ns = 40'000;   // virtual time run between posting chunks
  uint32_t max_chunk = 8;           // WRs per post_send/post_recv call (a linked list)
  // Floor for the pairs' local ACK timeout exponent. A bandwidth-limited
  // link queues megabytes of READ responses (duplicates included), and a
  // timeout shorter than that queue gives up after retry_cnt rounds,
  // which is congestion, not a transport error.
  uint8_t min_timeout = 0;
  uint64_t max_virtual_ns = 600'000'000'000ull;
  double wall_limit_s = 50.0;       // give up (and fail) rather than hit meson's timeout
};

struct Outcome {
  std::vector<std::string> findings;  // empty: the transport agrees with the model
  TransportCounters transport;        // summed over the devices
  uint64_t tx_no_mbuf = 0;            // device counters, summed
  uint64_t rx_icrc_err = 0;
  uint64_t rx_invalid = 0;
  sim::SimCounters wire;
  uint64_t virtual_ns = 0;
  double wall_s = 0;
  size_t completions = 0;
};

Outcome run_scenario(const Scenario& s, const HarnessOptions& o);

}  // namespace uroce::test::model
