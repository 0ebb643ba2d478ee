// SPDX-License-Identifier: BSD-3-Clause
// What the RC, UD and SRQ contexts set up alike, as rdma-core's examples do
// in each pp_init_ctx: the registered buffer, a QP with one send WR, and
// RESET -> INIT. Each returns nullptr (or an errno) and leaves a message.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "options.h"
#include "uroce/port/endpoint.h"
#include "uroce/verbs/verbs.h"

namespace uroce::pingpong {

std::string errno_text(const std::string& what, int err);

// `bytes` of DPDK memory registered for local writes.
std::unique_ptr<MemoryRegion> alloc_buffer(ProtectionDomain& pd, uint64_t bytes, std::string& error);

// The CQ of `cqe` entries; with -e on a completion channel made into
// `channel` first, as the examples' pp_init_ctx does.
std::unique_ptr<CompletionQueue> create_cq(Device& dev, int cqe, const Options& o,
                                           std::unique_ptr<CompletionChannel>& channel, std::string& error);

// A QP of `type` on `cq` with one send WR and one SGE, receiving from `srq`
// or into max_recv_wr WRs of its own. Adds IBV_SEND_INLINE to send_flags
// when the QP can take a whole `size`-byte message inline.
std::unique_ptr<QueuePair> create_qp(ProtectionDomain& pd, CompletionQueue& cq, ibv_qp_type type,
                                     SharedReceiveQueue* srq, uint32_t max_recv_wr, uint32_t size,
                                     unsigned& send_flags, int& err);

// RESET -> INIT on `port`, P_Key index 0: no remote access for RC, `qkey`
// for UD. 0 or an errno.
int modify_to_init(QueuePair& qp, ibv_qp_type type, uint8_t port, uint32_t qkey = 0);

// RTR and RTS as the rdma-core examples ask them: -m, -l (SL), -g, -i,
// one outstanding READ each way, timeout 14, 7 retries. hop_limit 64: they
// ask 1, which rxe ignores for the route's (64 in the captures); 64 gives
// the same wire and survives a router.
RcConnectOptions rc_options(const Options& o, uint32_t my_psn);

}  // namespace uroce::pingpong
