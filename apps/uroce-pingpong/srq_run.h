// SPDX-License-Identifier: BSD-3-Clause
// srq_pingpong's main loop: the client starts with one SEND on every QP;
// completions are matched to their QP by wc.qp_num, and each QP posts its
// next SEND once its previous SEND and a RECV on it have completed. -n
// counts SENDs and RECVs over all QPs, so a side may send a few more than
// -n (one per QP in flight), as srq_pingpong does. The SRQ is refilled
// when no more than one receive per QP is left.
#pragma once

#include <string>

#include "loop_support.h"
#include "options.h"
#include "run.h"
#include "srq_context.h"

namespace uroce::pingpong {

// `routs`: receives already posted.
RunResult run_srq_pingpong(SrqContext& ctx, const PollFn& poll, const Options& o, bool client, int routs);

// --chk: the pattern seed of QP `qp`'s n-th message (distinct per QP).
inline uint32_t srq_seed(int qp, uint32_t n) { return uint32_t(qp) << 20 ^ n; }

}  // namespace uroce::pingpong
