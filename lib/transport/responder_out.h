// SPDX-License-Identifier: BSD-3-Clause
// What the responder sends: ACKs and NAKs, READ responses and atomic ACKs,
// queued in PSN order so that an ACK never overtakes a READ response the
// requester is still waiting for.
#pragma once

#include "qp.h"

namespace uroce::transport {

// Queues an ACK/NAK; a plain ACK replaces a plain ACK still queued at the
// tail (coalescing), anything else is appended.
void queue_ack(Qp& qp, uint8_t syndrome, uint32_t psn);
// Sends a NAK at once (used right before the QP enters the error state).
void send_nak_now(Qp& qp, uint8_t syndrome, uint32_t psn);

// A slot for a READ/ATOMIC request, reusing the oldest.
RdAtomicResource& new_resource(Qp& qp);
// The saved request that PSN `psn` belongs to, for a duplicate.
RdAtomicResource* find_resource(Qp& qp, uint32_t psn);
// Queues the response to `r`, starting at `from_psn` (a READ re-executed
// for a duplicate may start in the middle).
void queue_response(Qp& qp, RdAtomicResource& r, uint32_t from_psn);

}  // namespace uroce::transport
