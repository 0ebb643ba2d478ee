// Shared receive queue: receive WQEs that any QP attached to it consumes,
// in posting order (ibv_create_srq / ibv_post_srq_recv).
#pragma once

#include <memory>

#include "uroce/verbs/types.h"

namespace uroce {

namespace transport {
struct RecvQueue;
}

class ProtectionDomain;

class SharedReceiveQueue {
 public:
  ~SharedReceiveQueue();
  SharedReceiveQueue(const SharedReceiveQueue&) = delete;
  SharedReceiveQueue& operator=(const SharedReceiveQueue&) = delete;

  // ibv_post_srq_recv: 0, or EINVAL/ENOMEM with *bad at the first WR not posted.
  int post_recv(const RecvWr* wr, const RecvWr** bad);
  uint32_t max_wr() const;
  uint32_t max_sge() const { return max_sge_; }
  uint32_t posted() const;
  ProtectionDomain& pd() const { return *pd_; }

  // Transport side.
  transport::RecvQueue& queue() { return *queue_; }
  void attach() { ++users_; }
  void detach() { --users_; }

 private:
  friend class ProtectionDomain;
  SharedReceiveQueue(ProtectionDomain* pd, const SrqInitAttr& attr);

  ProtectionDomain* pd_;
  uint32_t max_sge_;
  std::unique_ptr<transport::RecvQueue> queue_;
  uint32_t users_ = 0;
};

}  // namespace uroce
