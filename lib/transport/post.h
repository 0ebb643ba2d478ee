// SPDX-License-Identifier: BSD-3-Clause
// ibv_post_send / ibv_post_recv: validate each work request as verbs does,
// then copy it into the queue (the caller may reuse its WR at once).
#pragma once

#include "qp.h"

namespace uroce::transport {

int post_send(Qp& qp, const SendWr* wr, const SendWr** bad);
// The checks of one send WR that do not depend on the queue's contents or
// the QP's state: opcode for the QP type, SGE count, inline, atomic and
// message sizes, UD address handle. 0 or EINVAL. Reads only what modify()
// and creation set, so threaded mode runs it on the caller's thread.
int check_send(const Qp& qp, const SendWr& wr);
// Whether post_send would take every WR of the chain: 0, or the errno it
// would return with *bad at the first WR it would refuse. Posts nothing.
int check_send_chain(const Qp& qp, const SendWr* wr, const SendWr** bad);
int post_recv(Qp& qp, const RecvWr* wr, const RecvWr** bad);
// Into a receive queue (the QP's or an SRQ's); EINVAL/ENOMEM.
int post_recv_to(RecvQueue& rq, EngineServices& eng, const RecvWr& wr);
// An RC QP starts (creation) or stops (destruction, after its reset) taking
// receives from its receive queue, its own or an SRQ's: the free block it
// swaps in when it takes one (RecvQueue::take).
void attach_recv(Qp& qp);
void detach_recv(Qp& qp);

}  // namespace uroce::transport
