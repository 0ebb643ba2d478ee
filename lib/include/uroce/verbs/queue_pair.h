// SPDX-License-Identifier: BSD-3-Clause
// Queue pair (RC, UC or UD): the verbs state machine driven by modify() with
// ibv_qp_attr_mask bits, and the send and receive queues.
//
// Errors are returned as errno values, never thrown: EINVAL for a bad
// attribute, mask or state, ENOMEM for a full queue, as a verbs user expects.
#pragma once

#include "uroce/api.h"

#include <infiniband/verbs.h>

#include <cstdint>
#include <memory>

#include "uroce/cc/dcqcn.h"
#include "uroce/verbs/counters.h"
#include "uroce/verbs/types.h"

namespace uroce {

namespace transport {
struct Qp;
}
namespace detail {
class EngineThread;
struct QpSubmit;
struct Access;
}  // namespace detail

class MemoryWindow;
class ProtectionDomain;
namespace client {
class QueuePair;
}

class UROCE_API QueuePair {
 public:
  ~QueuePair();
  QueuePair(const QueuePair&) = delete;
  QueuePair& operator=(const QueuePair&) = delete;

  // ibv_modify_qp. Entering IBV_QPS_ERR flushes every outstanding WR with
  // IBV_WC_WR_FLUSH_ERR.
  int modify(const ibv_qp_attr& attr, int attr_mask);
  // ibv_query_qp.
  int query(ibv_qp_attr& attr, int attr_mask, QpInitAttr& init) const;

  // ibv_post_send / ibv_post_recv: 0, or an errno with *bad at the first WR
  // not posted (the ones before it are posted). In threaded mode they only
  // check and queue the WRs for the engine thread, without a lock: one
  // application thread may post to a QP at a time.
  int post_send(const SendWr* wr, const SendWr** bad);
  int post_recv(const RecvWr* wr, const RecvWr** bad);
  // post_send, all or nothing: either every WR of the chain is posted, or
  // none is and the errno names *bad, the first WR refused (ibv_wr_complete
  // commits a batch this way).
  int post_send_all(const SendWr* wr, const SendWr** bad);
  // ibv_bind_mw: binds a type 1 window by posting an IBV_WR_BIND_MW work
  // request with the window's next rkey (its low 8 bits plus one), which
  // mw.rkey() reports from now on. It completes with IBV_WC_BIND_MW, or
  // IBV_WC_MW_BIND_ERR (and the QP fails) if the bind breaks a rule.
  // EINVAL for a type 2 window or a range without a region, EPERM for a
  // region of another PD, else post_send's errors.
  int bind_mw(MemoryWindow& mw, const MwBind& bind);

  uint32_t qp_num() const;
  ibv_qp_type qp_type() const;
  ibv_qp_state state() const;
  // Live in embedded mode; in threaded mode a snapshot taken by this call.
  const TransportCounters& counters() const;
  // Congestion control: R_C, R_T, α, CNPs and CE marks (a snapshot; in
  // threaded mode it parks the engine for the copy).
  cc::CcStats cc_stats() const;
  ProtectionDomain& pd() const { return *pd_; }

 private:
  friend struct detail::Access;
  friend class ProtectionDomain;
  QueuePair(ProtectionDomain* pd, std::unique_ptr<transport::Qp> impl);
  QueuePair(ProtectionDomain* pd, std::unique_ptr<client::QueuePair> remote, const QpInitAttr& init);

  ProtectionDomain* pd_;
  std::unique_ptr<transport::Qp> impl_;
  // Threaded mode's submission queue; made when the engine thread first
  // drives this QP and kept until the QP dies.
  std::unique_ptr<detail::QpSubmit> sub_;
  mutable TransportCounters counters_snapshot_;
  std::unique_ptr<client::QueuePair> remote_;  // a client of uroced
  QpInitAttr remote_init_{};
};

}  // namespace uroce
