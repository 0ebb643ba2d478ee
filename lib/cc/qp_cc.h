// A QP's congestion-control state: its algorithm, the DCQCN RP and NP,
// its pacing clock and counters. Owned by transport::Qp; the engine and the
// transport reach it through transport/cc.h.
#pragma once

#include <cstdint>

#include "uroce/cc/dcqcn.h"
#include "uroce/cc/dcqcn_rp.h"

namespace uroce::cc {

struct QpCc {
  CcAlgo algo = CcAlgo::none;
  uint8_t cnp_dscp = 48;
  uint8_t cnp_prio = 6;
  DcqcnRp rp;
  DcqcnNp np;
  // Pacing: the earliest time (ns) the next packet may leave while the RP
  // is limited. Fractional, so that rounding does not drift the rate.
  double next_send = 0;
  bool paced = false;  // waiting on the engine's pacing heap
  uint64_t cnps_sent = 0;
  uint64_t cnps_received = 0;
  uint64_t ecn_marks = 0;
  uint64_t paced_waits = 0;
};

}  // namespace uroce::cc
