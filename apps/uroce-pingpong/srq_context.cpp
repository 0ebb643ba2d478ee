// SPDX-License-Identifier: BSD-3-Clause
#include "srq_context.h"
#include "qp_setup.h"
#include "work_requests.h"

namespace uroce::pingpong {

std::unique_ptr<SrqContext> SrqContext::create(Device& dev, const Options& o, std::string& error) {
  std::unique_ptr<SrqContext> c(new SrqContext());
  c->o_ = &o;
  c->chk_ = o.chk;
  c->size_ = o.size;
  // A receive slot per posted receive can be reused once rx_depth later
  // receives were posted: by then its completion has been checked.
  c->slots_ = o.chk ? o.rx_depth : 1;
  const uint64_t tx_bytes = o.chk ? uint64_t(o.num_qp) * o.size : 0;
  const uint64_t bytes = uint64_t(c->slots_) * o.size + tx_bytes;
  c->pd_ = dev.alloc_pd();
  int err = 0;
  c->mr_ = alloc_buffer(*c->pd_, bytes, error);
  if (!c->mr_) return nullptr;
  c->rx_ = static_cast<uint8_t*>(c->mr_->addr());  // zeroed, as srq_pingpong's buffer
  c->tx_ = o.chk ? c->rx_ + uint64_t(c->slots_) * o.size : c->rx_;
  c->cq_ = create_cq(dev, int(o.rx_depth + o.num_qp), o, c->channel_, error);
  if (!c->cq_) return nullptr;
  SrqInitAttr sa;
  sa.max_wr = o.rx_depth;
  sa.max_sge = 1;
  c->srq_ = c->pd_->create_srq(sa, err);
  if (!c->srq_) return error = errno_text("couldn't create SRQ", err), nullptr;
  for (uint32_t i = 0; i < o.num_qp; ++i) {
    auto qp = create_qp(*c->pd_, *c->cq_, IBV_QPT_RC, c->srq_.get(), 0, o.size, c->send_flags_, err);
    if (!qp) return error = errno_text("couldn't create QP[" + std::to_string(i) + "]", err), nullptr;
    c->qps_.push_back(std::move(qp));
  }
  for (uint32_t i = 0; i < o.num_qp; ++i) {
    if (int e = modify_to_init(*c->qps_[i], IBV_QPT_RC, uint8_t(o.ib_port)))
      return error = errno_text("failed to modify QP[" + std::to_string(i) + "] to INIT", e), nullptr;
  }
  return c;
}

SrqContext::~SrqContext() {
  qps_.clear();  // before the SRQ they use
  srq_.reset();
  if (mr_) pd_->dereg_mr(mr_);
}

int SrqContext::post_recv(int n) {
  int i = 0;
  for (; i < n; ++i) {
    const uint64_t slot = next_slot_ % slots_;
    ibv_sge sge{reinterpret_cast<uintptr_t>(rx_ + slot * size_), size_, mr_->lkey()};
    if (post_one_recv(*srq_, sge, kRecvWrid | (chk_ ? slot << 2 : 0)) != 0) break;
    ++next_slot_;
  }
  return i;
}

int SrqContext::post_send(int qp_index) {
  ibv_sge sge{reinterpret_cast<uintptr_t>(tx(qp_index)), size_, mr_->lkey()};
  return post(*qps_[size_t(qp_index)], send_wr(sge, send_flags_));
}

int SrqContext::find_qp(uint32_t qpn) const {
  for (size_t i = 0; i < qps_.size(); ++i)
    if (qps_[i]->qp_num() == qpn) return int(i);
  return -1;
}

bool SrqContext::connect(const std::vector<exchange::PingpongDest>& my,
                         const std::vector<exchange::PingpongDest>& remote, std::string& error) {
  for (size_t i = 0; i < qps_.size(); ++i) {
    const std::string qp = "QP[" + std::to_string(i) + "]";
    // srq_pingpong sends a zero record for each QP it does not have.
    if (i >= remote.size() || remote[i].qpn == 0)
      return error = "the peer has fewer QPs than our " + std::to_string(qps_.size()) +
                     " (no QPN for " + qp + "): give both sides the same -q",
             false;
    if (remote[i].gid == wire::IpAddr{})
      return error = "the peer sent no GID for " + qp + ": start ibv_srq_pingpong with -g IDX on a RoCE device", false;
    std::string e;
    if (uroce::connect_rc(*qps_[i], {remote[i].qpn, remote[i].psn, remote[i].gid}, rc_options(*o_, my[i].psn), e))
      return error = qp + ": failed to " + e, false;
  }
  return true;
}

}  // namespace uroce::pingpong
