// SPDX-License-Identifier: BSD-3-Clause
#include "access.h"
#include "uroce/verbs/queue_pair.h"

#include "../engine/engine.h"
#include "../transport/cc.h"
#include "../transport/post.h"
#include "../transport/qp_modify.h"
#include "../transport/transport.h"
#include "engine/engine_thread.h"
#include "engine/qp_submit.h"
#include "uroce/verbs/completion_queue.h"
#include "uroce/verbs/device.h"
#include "uroce/verbs/memory_region.h"
#include "uroce/verbs/memory_window.h"
#include "uroce/verbs/protection_domain.h"
#include "uroce/verbs/shared_receive_queue.h"
#include "uroce/client/daemon_client.h"

namespace uroce {

QueuePair::QueuePair(ProtectionDomain* pd, std::unique_ptr<transport::Qp> impl)
    : pd_(pd), impl_(std::move(impl)) {
  impl_->owner = this;
}

QueuePair::QueuePair(ProtectionDomain* pd, std::unique_ptr<client::QueuePair> remote, const QpInitAttr& init)
    : pd_(pd), remote_(std::move(remote)), remote_init_(init) {
  remote_->context = this;
}

QueuePair::~QueuePair() {
  if (remote_) {
    remote_.reset();
    --pd_->children_;
    return;
  }
  detail::EngineThread& thread = detail::to_thread(pd_->device());
  detail::Pause pause(thread);
  transport::Qp& qp = *impl_;
  detail::to_engine(pd_->device()).send_deferred_acks(&qp);
  // Like ibv_destroy_qp: outstanding work is dropped without completions,
  // but the regions it referenced are released.
  transport::modify_qp(qp, [] { ibv_qp_attr a{}; a.qp_state = IBV_QPS_RESET; return a; }(), IBV_QP_STATE);
  transport::detach_recv(qp);
  detail::to_engine(pd_->device()).remove_qp(&qp);
  detail::to_engine(pd_->device()).mrs().unbind_windows_of_qp(pd_, qp.qpn);
  qp.scq->detach();
  qp.rcq->detach();
  if (qp.srq) --qp.srq->users;
  thread.detach_qp(*impl_);
  detail::to_engine(pd_->device()).drop_async_events(this);
  --pd_->children_;
}

int QueuePair::modify(const ibv_qp_attr& attr, int attr_mask) {
  if (remote_) return remote_->modify(attr, attr_mask);
  detail::EngineThread& thread = detail::to_thread(pd_->device());
  detail::Pause pause(thread);
  // The ACKs still held for coalescing leave first: the peer's requests
  // they answer have completed here (an application that got its last
  // receive and disconnects at once), and from ERR or RESET nothing
  // answers the peer's retries.
  if ((attr_mask & IBV_QP_STATE) && (attr.qp_state == IBV_QPS_ERR || attr.qp_state == IBV_QPS_RESET))
    detail::to_engine(pd_->device()).send_deferred_acks(impl_.get());
  const int err = transport::modify_qp(*impl_, attr, attr_mask);
  thread.after_control(sub_.get());
  return err;
}

int QueuePair::query(ibv_qp_attr& attr, int attr_mask, QpInitAttr& init) const {
  (void)attr_mask;  // everything is cheap to report
  if (remote_) {
    init = remote_init_;
    return remote_->query(attr);
  }
  detail::Pause pause(detail::to_thread(pd_->device()));
  transport::query_qp(*impl_, attr);
  init = impl_->init;
  return 0;
}

int QueuePair::post_send(const SendWr* wr, const SendWr** bad) {
  if (remote_) return remote_->post_send(wr, bad);
  if (sub_ != nullptr && sub_->thread->threaded()) {
    bool queued = false;
    const int err = detail::submit_send(*sub_, *impl_, wr, bad, queued);
    if (queued) sub_->thread->ring(*sub_);
    return err;
  }
  return transport::post_send(*impl_, wr, bad);
}

int QueuePair::post_send_all(const SendWr* wr, const SendWr** bad) {
  if (remote_) return remote_->post_send_all(wr, bad);
  // Room only grows between the check and the post (the engine retires
  // WRs, this thread alone posts): the post then takes every WR.
  if (sub_ != nullptr && sub_->thread->threaded()) {
    if (const int err = detail::check_submit_chain(*sub_, *impl_, wr, bad)) return err;
  } else if (const int err = transport::check_send_chain(*impl_, wr, bad)) {
    return err;
  }
  return post_send(wr, bad);
}

int QueuePair::bind_mw(MemoryWindow& mw, const MwBind& bind) {
  const MwBindInfo& b = bind.bind_info;
  if (mw.type() != IBV_MW_TYPE_1 || (b.mr == nullptr && (b.addr || b.length))) return EINVAL;
  if (b.mr != nullptr && &b.mr->pd() != &mw.pd()) return EPERM;
  SendWr wr;
  wr.wr_id = bind.wr_id;
  wr.opcode = IBV_WR_BIND_MW;
  wr.send_flags = bind.send_flags;
  wr.bind_mw.mw = &mw;
  wr.bind_mw.rkey = mw.handle() | ((mw.rkey() + 1) & 0xFFu);
  wr.bind_mw.bind_info = b;
  const SendWr* bad = nullptr;
  if (const int err = post_send(&wr, &bad)) return err;
  mw.rkey_ = wr.bind_mw.rkey;
  return 0;
}

int QueuePair::post_recv(const RecvWr* wr, const RecvWr** bad) {
  if (remote_) return remote_->post_recv(wr, bad);
  if (sub_ != nullptr && sub_->thread->threaded()) {
    bool queued = false;
    const int err = detail::submit_recv(*sub_, *impl_, wr, bad, queued);
    if (queued) sub_->thread->ring(*sub_, false);
    return err;
  }
  return transport::post_recv(*impl_, wr, bad);
}

uint32_t QueuePair::qp_num() const { return remote_ ? remote_->qp_num() : impl_->qpn; }
ibv_qp_type QueuePair::qp_type() const { return remote_ ? remote_init_.qp_type : impl_->init.qp_type; }

ibv_qp_state QueuePair::state() const {
  if (remote_) return remote_->state();
  detail::Pause pause(detail::to_thread(pd_->device()));
  return impl_->state;
}

const TransportCounters& QueuePair::counters() const {
  if (remote_) return counters_snapshot_;  // the daemon keeps them; clients read zero
  detail::EngineThread& thread = detail::to_thread(pd_->device());
  if (!thread.threaded()) return impl_->counters;
  detail::Pause pause(thread);
  counters_snapshot_ = impl_->counters;
  return counters_snapshot_;
}

cc::CcStats QueuePair::cc_stats() const {
  if (remote_) return {};
  detail::EngineThread& thread = detail::to_thread(pd_->device());
  if (!thread.threaded()) return transport::cc_stats(*impl_);
  detail::Pause pause(thread);
  return transport::cc_stats(*impl_);
}

}  // namespace uroce
