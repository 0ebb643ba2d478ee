// SPDX-License-Identifier: BSD-3-Clause
// Congestion control in the transport: the pacing gate before each request
// packet, the byte accounting after each packet, CE marks and CNPs on
// receive (docs/dcqcn.md). With cc none each hook costs one branch.
#pragma once

#include <cstdint>

#include "qp.h"
#include "uroce/cc/dcqcn.h"
#include "uroce/wire/parser.h"

namespace uroce::transport {

// At QP creation: the algorithm and parameters, and the ECN/DSCP of data.
void cc_setup(Qp& qp, const cc::CcConfig& cfg);

// A QP reset: the rate machine starts again unlimited (counters stay).
void cc_reset(Qp& qp);

bool cc_gate_slow(Qp& qp);
void cc_sent_slow(Qp& qp, uint32_t frame_len);
void cc_ce_slow(Qp& qp);
bool cc_ackreq_due_slow(Qp& qp, bool ack_req);

// May the requester send its next packet now? If not, the QP waits on the
// engine's pacing heap until its send time or its rate machine's next event
// (a timer increase may bring the send time forward). With DCQCN every QP is
// paced, unlimited ones at the ceiling, as a NIC's wire would: packets not
// yet built can still be slowed by a CNP.
inline bool cc_gate(Qp& qp) { return qp.cc.algo == cc::CcAlgo::none || cc_gate_slow(qp); }
// A packet of `frame_len` bytes of this QP went out.
inline void cc_sent(Qp& qp, uint32_t frame_len) {
  if (qp.cc.algo != cc::CcAlgo::none) cc_sent_slow(qp, frame_len);
}
// Every received packet for the QP: counts CE marks, answers them (NP).
inline void cc_rx(Qp& qp, const wire::PacketView& pkt) {
  if (pkt.ecn() == 3) cc_ce_slow(qp);
}
// A data packet is about to go out with AckReq = `ack_req`: should it ask
// for an ACK anyway? A slowly paced QP asks at least every quarter of the
// local ACK timeout, or the timer would expire while the requester only
// waits for its own pacing (and resend a window that arrived intact).
inline bool cc_ackreq_due(Qp& qp, bool ack_req) {
  return qp.cc.algo == cc::CcAlgo::none ? ack_req : cc_ackreq_due_slow(qp, ack_req);
}
// A CNP addressed to the QP (RP), from its peer (checked by the engine).
void cc_cnp_rx(Qp& qp);

cc::CcStats cc_stats(const Qp& qp);

}  // namespace uroce::transport
