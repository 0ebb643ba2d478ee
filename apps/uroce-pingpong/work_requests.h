// SPDX-License-Identifier: BSD-3-Clause
// The one-SGE work requests every ping-pong context posts (the examples'
// pp_post_recv / pp_post_send), so the RC, UD and SRQ contexts differ only
// in where the buffers are and what a UD send adds.
#pragma once

#include <cstdint>

#include "endpoint.h"
#include "uroce/verbs/verbs.h"

namespace uroce::pingpong {

// A SEND of `sge` with `flags`; the caller adds what its QP type needs.
inline SendWr send_wr(ibv_sge& sge, unsigned flags) {
  SendWr wr;
  wr.wr_id = kSendWrid;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_SEND;
  wr.send_flags = flags;
  return wr;
}

// A receive of `sge` tagged `wr_id`, posted to a QP or an SRQ; 0 or errno.
template <class Queue>
int post_one_recv(Queue& q, ibv_sge& sge, uint64_t wr_id = kRecvWrid) {
  RecvWr wr;
  wr.wr_id = wr_id;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  const RecvWr* bad = nullptr;
  return q.post_recv(&wr, &bad);
}

// Up to n receives of the same buffer; how many were posted.
template <class Queue>
int post_recvs(Queue& q, ibv_sge& sge, int n) {
  int i = 0;
  while (i < n && post_one_recv(q, sge) == 0) ++i;
  return i;
}

inline int post(QueuePair& qp, const SendWr& wr) {
  const SendWr* bad = nullptr;
  return qp.post_send(&wr, &bad);
}

}  // namespace uroce::pingpong
