#include "context.h"
#include "qp_setup.h"
#include "work_requests.h"

#include <cstring>

namespace uroce::pingpong {

std::unique_ptr<Context> Context::create(Device& dev, const Options& o, bool client, std::string& error) {
  std::unique_ptr<Context> c(new Context());
  c->o_ = &o;
  c->size_ = o.size;
  c->pd_ = dev.alloc_pd();
  int err = 0;
  const uint64_t bytes = client ? 2 * uint64_t(o.size) : o.size;
  c->mr_ = alloc_buffer(*c->pd_, bytes, error);
  if (!c->mr_) return nullptr;
  c->tx_ = static_cast<uint8_t*>(c->mr_->addr());
  c->rx_ = client ? c->tx_ + o.size : c->tx_;
  std::memset(c->tx_, 0x7b, bytes);  // rc_pingpong's fill
  c->cq_ = dev.create_cq(int(o.rx_depth + 1), err);
  if (!c->cq_) return error = errno_text("couldn't create CQ", err), nullptr;
  c->qp_ = create_qp(*c->pd_, *c->cq_, IBV_QPT_RC, nullptr, o.rx_depth, o.size, c->send_flags_, err);
  if (!c->qp_) return error = errno_text("couldn't create QP", err), nullptr;
  if (int e = modify_to_init(*c->qp_, IBV_QPT_RC, uint8_t(o.ib_port)))
    return error = errno_text("failed to modify QP to INIT", e), nullptr;
  return c;
}

Context::~Context() {
  qp_.reset();
  if (mr_) pd_->dereg_mr(mr_);
}

int Context::post_recv(int n) {
  ibv_sge sge{reinterpret_cast<uintptr_t>(rx_), size_, mr_->lkey()};
  return post_recvs(*qp_, sge, n);
}

int Context::post_send() {
  ibv_sge sge{reinterpret_cast<uintptr_t>(tx_), size_, mr_->lkey()};
  return post(*qp_, send_wr(sge, send_flags_));
}

bool Context::connect(const exchange::PingpongDest& remote, uint32_t my_psn, std::string& error) {
  // RoCE addresses a peer only by its GID; rc_pingpong without -g sends
  // none (and then expects a LID, which Ethernet does not have).
  if (remote.gid == wire::IpAddr{})
    return error = "the peer sent no GID (GID ::): start ibv_rc_pingpong with -g IDX on a RoCE device", false;
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_RTR;
  a.path_mtu = o_->mtu_enum;
  a.dest_qp_num = remote.qpn;
  a.rq_psn = remote.psn;
  a.max_dest_rd_atomic = 1;
  a.min_rnr_timer = 12;
  a.ah_attr.is_global = 1;
  a.ah_attr.dlid = uint16_t(remote.lid);
  a.ah_attr.sl = uint8_t(o_->sl);
  a.ah_attr.port_num = uint8_t(o_->ib_port);
  // rc_pingpong asks hop_limit 1, which rxe ignores for the route's (64 in
  // the captures); 64 gives the same wire and survives a router.
  a.ah_attr.grh.hop_limit = 64;
  std::memcpy(a.ah_attr.grh.dgid.raw, remote.gid.bytes.data(), 16);
  a.ah_attr.grh.sgid_index = uint8_t(o_->gid_idx);
  if (int e = qp_->modify(a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                                 IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
    return error = errno_text("failed to modify QP to RTR", e), false;
  a.qp_state = IBV_QPS_RTS;
  a.timeout = 14;
  a.retry_cnt = 7;
  a.rnr_retry = 7;
  a.sq_psn = my_psn;
  a.max_rd_atomic = 1;
  if (int e = qp_->modify(a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
                                 IBV_QP_MAX_QP_RD_ATOMIC))
    return error = errno_text("failed to modify QP to RTS", e), false;
  return true;
}

}  // namespace uroce::pingpong
