// SPDX-License-Identifier: BSD-3-Clause
// What happened to the frames on one directed link, or on the whole wire.
#pragma once

#include <cstdint>

namespace uroce::sim {

struct SimCounters {
  uint64_t sent = 0;        // frames that entered the link (broadcast: one per link)
  uint64_t delivered = 0;   // handed to the receiver by rx_burst
  uint64_t lost = 0;        // dropped by a loss model, i.i.d. or burst
  uint64_t burst_lost = 0;  // the part of `lost` due to the Gilbert-Elliott bad state
  uint64_t duplicated = 0;  // extra copies made
  uint64_t corrupted = 0;   // frames with one bit flipped
  uint64_t reordered = 0;   // frames given the extra reorder delay
  uint64_t oversize = 0;    // larger than the sender's MTU allows
  uint64_t cut = 0;         // dropped because the link is cut
  // With the switch on (sim_switch.h): frames of this link the egress
  // queue dropped (tail or RED), and frames it marked CE.
  uint64_t queue_dropped = 0;
  uint64_t ecn_marked = 0;
  // Whole-wire only: frames no port could receive (too short to route, or
  // addressed to the sender itself), and copies the wire's pool could not
  // provide (the duplicate is skipped; a frame to corrupt is dropped).
  uint64_t unroutable = 0;
  uint64_t no_buffer = 0;

  bool operator==(const SimCounters&) const = default;
};

}  // namespace uroce::sim
