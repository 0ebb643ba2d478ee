#include "uroce/verbs/queue_pair.h"

#include "../engine/engine.h"
#include "../transport/post.h"
#include "../transport/qp_modify.h"
#include "../transport/transport.h"
#include "uroce/verbs/completion_queue.h"
#include "uroce/verbs/device.h"
#include "uroce/verbs/protection_domain.h"
#include "uroce/verbs/shared_receive_queue.h"

namespace uroce {

QueuePair::QueuePair(ProtectionDomain* pd, std::unique_ptr<transport::Qp> impl)
    : pd_(pd), impl_(std::move(impl)) {}

QueuePair::~QueuePair() {
  transport::Qp& qp = *impl_;
  // Like ibv_destroy_qp: outstanding work is dropped without completions,
  // but the regions it referenced are released.
  transport::modify_qp(qp, [] { ibv_qp_attr a{}; a.qp_state = IBV_QPS_RESET; return a; }(), IBV_QP_STATE);
  qp.eng->remove_qp(&qp);
  qp.scq->detach();
  qp.rcq->detach();
  if (qp.srq) qp.srq->detach();
  --pd_->children_;
}

int QueuePair::modify(const ibv_qp_attr& attr, int attr_mask) { return transport::modify_qp(*impl_, attr, attr_mask); }

int QueuePair::query(ibv_qp_attr& attr, int attr_mask, QpInitAttr& init) const {
  (void)attr_mask;  // everything is cheap to report
  transport::query_qp(*impl_, attr);
  init = impl_->init;
  return 0;
}

int QueuePair::post_send(const SendWr* wr, const SendWr** bad) { return transport::post_send(*impl_, wr, bad); }
int QueuePair::post_recv(const RecvWr* wr, const RecvWr** bad) { return transport::post_recv(*impl_, wr, bad); }
uint32_t QueuePair::qp_num() const { return impl_->qpn; }
ibv_qp_type QueuePair::qp_type() const { return impl_->init.qp_type; }
ibv_qp_state QueuePair::state() const { return impl_->state; }
const TransportCounters& QueuePair::counters() const { return impl_->counters; }

}  // namespace uroce
