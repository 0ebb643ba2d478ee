// SPDX-License-Identifier: BSD-3-Clause
// Shared receive queue: receive WQEs that any QP attached to it consumes,
// in posting order (ibv_create_srq / ibv_post_srq_recv).
#pragma once

#include "uroce/api.h"

#include <infiniband/verbs.h>

#include <memory>

#include "uroce/verbs/types.h"

namespace uroce {

namespace transport {
struct RecvQueue;
}
namespace detail {
struct Access;
}
namespace client {
class SharedReceiveQueue;
}

class ProtectionDomain;

class UROCE_API SharedReceiveQueue {
 public:
  ~SharedReceiveQueue();
  SharedReceiveQueue(const SharedReceiveQueue&) = delete;
  SharedReceiveQueue& operator=(const SharedReceiveQueue&) = delete;

  // ibv_post_srq_recv: 0, or EINVAL/ENOMEM with *bad at the first WR not posted.
  int post_recv(const RecvWr* wr, const RecvWr** bad);
  // ibv_modify_srq: IBV_SRQ_LIMIT arms the limit (0 disarms; above max_wr
  // is EINVAL); when a receive taken leaves fewer WQEs than the limit, the
  // device queues one IBV_EVENT_SRQ_LIMIT_REACHED (Device::get_async_event)
  // and the limit disarms. IBV_SRQ_MAX_WR (resizing) is EINVAL: not supported.
  int modify(const ibv_srq_attr& attr, int attr_mask);
  // ibv_query_srq: max_wr, max_sge and the armed limit (0 once it fired).
  int query(ibv_srq_attr& attr) const;
  uint32_t max_wr() const;
  uint32_t max_sge() const { return max_sge_; }
  // WQEs waiting; through uroced, 0 (the daemon holds them).
  uint32_t posted() const;
  ProtectionDomain& pd() const { return *pd_; }

 private:
  friend class ProtectionDomain;
  friend struct detail::Access;
  SharedReceiveQueue(ProtectionDomain* pd, const SrqInitAttr& attr);
  SharedReceiveQueue(ProtectionDomain* pd, std::unique_ptr<client::SharedReceiveQueue> remote);

  ProtectionDomain* pd_;
  uint32_t max_sge_;
  std::unique_ptr<transport::RecvQueue> queue_;
  std::unique_ptr<client::SharedReceiveQueue> remote_;  // a client of uroced
};

}  // namespace uroce
