// SPDX-License-Identifier: BSD-3-Clause
#include "access.h"
#include "uroce/verbs/shared_receive_queue.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>

#include "../engine/engine.h"
#include "../transport/post.h"
#include "../transport/recv_queue.h"
#include "engine/engine_thread.h"
#include "uroce/client/daemon_client.h"
#include "uroce/verbs/device.h"
#include "uroce/verbs/protection_domain.h"

namespace uroce {

SharedReceiveQueue::SharedReceiveQueue(ProtectionDomain* pd, const SrqInitAttr& attr)
    : pd_(pd), max_sge_(attr.max_sge), queue_(std::make_unique<transport::RecvQueue>()) {
  // Holder blocks are added as QPs attach (transport::attach_recv).
  queue_->reset(attr.max_wr, attr.max_sge, 0);
  queue_->owner = this;
}

SharedReceiveQueue::SharedReceiveQueue(ProtectionDomain* pd, std::unique_ptr<client::SharedReceiveQueue> remote)
    : pd_(pd), max_sge_(remote->max_sge()), remote_(std::move(remote)) {
  remote_->context = this;
}

SharedReceiveQueue::~SharedReceiveQueue() {
  if (remote_) {
    remote_.reset();
    --pd_->children_;
    return;
  }
  detail::Pause pause(detail::to_thread(pd_->device()));
  if (queue_->users != 0) {
    std::fprintf(stderr, "uroce: shared receive queue destroyed while %u QP(s) still use it\n", queue_->users);
    std::abort();
  }
  // An unread limit event would hand out a pointer to this queue.
  detail::to_engine(pd_->device()).drop_async_events(this);
  // Receives still posted hold references to their regions: give them back.
  memory::MrTable& mrs = detail::to_engine(pd_->device()).mrs();
  while (!queue_->wq.empty()) {
    const transport::SgeList sgl = queue_->sgl(queue_->wq.front());
    for (int i = 0; i < sgl.num; ++i)
      if (memory::Region* mr = mrs.find(sgl.sge[i].lkey)) memory::release(*mr);
    queue_->wq.pop();
  }
  --pd_->children_;
}

// Posted on the caller's thread with the engine parked: SRQ posts are
// rare enough (threaded mode) not to need a ring of their own.
int SharedReceiveQueue::post_recv(const RecvWr* wr, const RecvWr** bad) {
  if (remote_) return remote_->post_recv(wr, bad);
  detail::Pause pause(detail::to_thread(pd_->device()));
  for (; wr != nullptr; wr = wr->next) {
    if (int err = transport::post_recv_to(*queue_, detail::to_engine(pd_->device()), *wr)) {
      if (bad) *bad = wr;
      return err;
    }
  }
  return 0;
}

int SharedReceiveQueue::modify(const ibv_srq_attr& attr, int attr_mask) {
  if (attr_mask & ~(IBV_SRQ_LIMIT | IBV_SRQ_MAX_WR)) return EINVAL;
  if (attr_mask & IBV_SRQ_MAX_WR) return EINVAL;  // no resizing
  if (remote_) return attr_mask == 0 ? 0 : remote_->modify(attr, attr_mask);
  detail::Pause pause(detail::to_thread(pd_->device()));
  if (attr_mask & IBV_SRQ_LIMIT) {
    if (attr.srq_limit > queue_->wq.capacity()) return EINVAL;
    queue_->limit = attr.srq_limit;
  }
  return 0;
}

int SharedReceiveQueue::query(ibv_srq_attr& attr) const {
  if (remote_) return remote_->query(attr);
  detail::Pause pause(detail::to_thread(pd_->device()));
  attr.max_wr = queue_->wq.capacity();
  attr.max_sge = max_sge_;
  attr.srq_limit = queue_->limit;
  return 0;
}

uint32_t SharedReceiveQueue::max_wr() const { return remote_ ? remote_->max_wr() : queue_->wq.capacity(); }
uint32_t SharedReceiveQueue::posted() const {
  if (remote_) return 0;
  detail::Pause pause(detail::to_thread(pd_->device()));
  return queue_->wq.size();
}

}  // namespace uroce
