// SPDX-License-Identifier: BSD-3-Clause
// The congestion point of the simulated wire: an output-queued switch
// between the ports, with a link rate per port, one byte-limited FIFO per
// egress port, RED/ECN marking on enqueue (as DCQCN's CP) and tail drop.
//
// A frame from A to B, once the switch is on:
//   A's cable up    serialised at A's rate, then A's latency
//   pair link       the LinkFaults of A -> B as before (loss, duplicate,
//                   corrupt, reorder; their latency and bandwidth act as the
//                   switch's own transit), then the frame reaches B's queue
//   B's egress      tail drop, RED/ECN, then FIFO at B's rate
//   B's cable down  B's latency, then B's rx_burst
// Everything is in virtual time; RED draws from its own seeded generator,
// so runs are repeatable and turning the switch on does not shift the
// stream of the link faults.
#pragma once

#include <cstdint>

namespace uroce::sim {

// RED on the instantaneous queue, as DCQCN's CP (not RFC 2309's average):
// a frame arriving to q queued bytes is marked with probability 0 for
// q <= kmin, pmax * (q - kmin) / (kmax - kmin) for kmin < q <= kmax, and 1
// above kmax. An ECT frame (ECN 01 or 10) gets CE (11); a CE frame stays CE
// and counts as marked; a Not-ECT frame is dropped when drop_not_ect,
// else passes (then only the buffer limit drops it).
struct RedEcn {
  uint64_t kmin_bytes = 0;
  uint64_t kmax_bytes = 0;  // 0: no RED at all
  double pmax = 0.0;
  bool drop_not_ect = true;

  bool enabled() const { return kmax_bytes > 0; }
  // The marking probability for a queue of q bytes.
  double probability(uint64_t q) const {
    if (!enabled() || q <= kmin_bytes) return 0.0;
    if (q > kmax_bytes) return 1.0;
    return pmax * double(q - kmin_bytes) / double(kmax_bytes - kmin_bytes);
  }
};

struct SwitchPortConfig {
  uint64_t rate_bps = 0;     // the cable, both ways; 0 = infinite
  uint64_t latency_ns = 0;   // the cable's propagation delay, each way
  uint64_t buffer_bytes = 0; // egress queue limit; 0 = unlimited
  RedEcn red;
};

// One egress port. Depths are bytes not yet serialised (the frame on the
// wire counts for its remaining part). The occupancy times integrate the
// queue over virtual time exactly (it drains linearly between arrivals);
// "seen" counts classify the depth each arriving frame found.
struct SwitchCounters {
  uint64_t enqueued = 0;        // frames accepted into the queue
  uint64_t enqueued_bytes = 0;
  uint64_t marked = 0;          // ECT frames given CE, plus CE frames RED chose
  uint64_t red_dropped = 0;     // Not-ECT frames RED chose (drop_not_ect)
  uint64_t tail_dropped = 0;    // no room in the buffer
  uint64_t max_depth_bytes = 0; // after an enqueue
  uint64_t seen_below_kmin = 0;
  uint64_t seen_between = 0;    // kmin < q <= kmax
  uint64_t seen_above_kmax = 0;
  // Virtual time, in ns, since the switch port was configured.
  uint64_t time_ns = 0;
  double time_below_kmin_ns = 0;   // queue <= kmin
  double time_above_kmax_ns = 0;   // queue > kmax (the rest is between)
  double depth_byte_ns = 0;        // integral of the depth: / time_ns = mean

  uint64_t dropped() const { return red_dropped + tail_dropped; }
  double mean_depth_bytes() const { return time_ns > 0 ? depth_byte_ns / double(time_ns) : 0.0; }
};

}  // namespace uroce::sim
