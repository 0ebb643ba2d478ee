// SPDX-License-Identifier: BSD-3-Clause
// A QP's congestion-control state: its algorithm, the DCQCN RP and NP,
// its pacing clock and counters. Owned by transport::Qp; the engine and the
// transport reach it through transport/cc.h.
#pragma once

#include <cstdint>

#include "uroce/cc/dcqcn.h"
#include "cc/dcqcn_rp.h"

namespace uroce::cc {

struct QpCc {
  CcAlgo algo = CcAlgo::none;
  uint8_t cnp_dscp = 48;
  uint8_t cnp_prio = 6;
  DcqcnRp rp;
  DcqcnNp np;
  // Pacing (ns, fractional so that rounding does not drift the rate): the
  // last packet's slot started at `slot` and was `last_len` bytes long; the
  // next may leave at `next_send`, at most slot + last_len at the current
  // rate (a rate that grew while the QP waited shortens the wait). Both
  // count from `epoch`, which follows the clock (transport/cc.cpp): as
  // absolute ns (since boot) a double has a 2 ns step after four months,
  // a few % of a packet's time at 100 Gb/s.
  uint64_t epoch = 0;
  double slot = 0;
  double next_send = 0;
  uint32_t last_len = 0;
  // When the requester last asked for an ACK (AckReq), ns.
  uint64_t ackreq_at = 0;
  bool paced = false;  // waiting on the engine's pacing heap
  uint64_t cnps_sent = 0;
  uint64_t cnps_received = 0;
  uint64_t ecn_marks = 0;
  uint64_t paced_waits = 0;
};

}  // namespace uroce::cc
