// SPDX-License-Identifier: BSD-3-Clause
// What a simulated link does to the frames that cross it.
#pragma once

#include <cstdint>

namespace uroce::sim {

// Gilbert-Elliott burst loss: a two-state chain stepped once per frame.
// A bad period lasts 1/p_exit_bad frames on average and loses loss_bad of
// them; the long-run share of frames sent in the bad state is
// p_enter_bad / (p_enter_bad + p_exit_bad).
struct BurstLoss {
  double p_enter_bad = 0.0;  // per frame, in the good state
  double p_exit_bad = 1.0;   // per frame, in the bad state
  double loss_bad = 1.0;     // loss probability while bad
};

struct LinkFaults {
  // Propagation delay: the last bit arrives latency_ns after it left.
  uint64_t latency_ns = 1000;
  // 0 = infinite. Otherwise frames serialise one after another, so a frame
  // leaves (its last bit is on the wire) pkt_len * 8 / bandwidth after the
  // previous one left, or after it was sent if the link was idle.
  uint64_t bandwidth_bps = 0;
  double loss = 0.0;  // i.i.d. per frame
  BurstLoss burst;
  // Probability of an extra delay, so frames sent later overtake it.
  double reorder = 0.0;
  uint64_t reorder_delay_ns = 10'000;
  // Probability of a second copy (a separate mbuf), delivered
  // duplicate_delay_ns after the original.
  double duplicate = 0.0;
  uint64_t duplicate_delay_ns = 100;
  // Probability of one flipped bit somewhere after the Ethernet header.
  double corrupt = 0.0;
};

}  // namespace uroce::sim
