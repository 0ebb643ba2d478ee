#include "endpoint.h"

#include <cerrno>
#include <cstring>

namespace uroce::perf {
namespace {

constexpr int kAccess =
    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;

std::string errno_text(const char* what, int err) { return std::string(what) + ": " + std::strerror(err); }

}  // namespace

std::unique_ptr<Endpoint> Endpoint::create(Device& dev, const Options& o, uint64_t buf_bytes, uint32_t psn_seed,
                                           std::string& error) {
  std::unique_ptr<Endpoint> e(new Endpoint());
  e->dev_ = &dev;
  e->buf_bytes_ = buf_bytes;
  e->exposed_offset_ = o.kind == Kind::lat ? buf_bytes / 2 : 0;
  e->pd_ = dev.alloc_pd();
  int err = 0;
  const uint32_t depth = std::max<uint32_t>(o.tx_depth, 1);
  e->cq_ = dev.create_cq(int(2 * depth * o.num_qps + 64), err);
  if (!e->cq_) return error = errno_text("create_cq", err), nullptr;
  e->mr_ = e->pd_->alloc_mr(buf_bytes * o.num_qps, kAccess, err);
  if (!e->mr_)
    return error = errno_text("alloc_mr", err) + " (" + std::to_string(buf_bytes * o.num_qps) +
                   " bytes of DPDK memory; give EAL more with --eal \"-m MB\")",
           nullptr;
  for (uint32_t i = 0; i < o.num_qps; ++i) {
    QpInitAttr init;
    init.send_cq = init.recv_cq = e->cq_.get();
    init.qp_type = IBV_QPT_RC;
    init.cap.max_send_wr = depth;
    init.cap.max_recv_wr = depth;
    init.cap.max_send_sge = init.cap.max_recv_sge = 1;
    init.cap.max_inline_data = o.inline_size;
    auto qp = e->pd_->create_qp(init, err);
    if (!qp) return error = errno_text("create_qp", err), nullptr;
    e->qps_.push_back(std::move(qp));
    e->psns_.push_back((psn_seed * 2654435761u + i * 977) & 0xFFFFFF);  // like lrand48 & 0xffffff
  }
  return e;
}

Endpoint::~Endpoint() {
  qps_.clear();
  pd_->dereg_mr(mr_);
}

PeerInfo Endpoint::info(size_t qp) const {
  PeerInfo p;
  p.qpn = qps_[qp]->qp_num();
  p.psn = psns_[qp];
  p.rkey = mr_->rkey();
  p.vaddr = addr(qp) + exposed_offset_;
  p.out_reads = 16;
  p.gid = dev_->gids()[0];
  return p;
}

int Endpoint::connect(size_t i, const PeerInfo& remote, const Options& o, ibv_mtu mtu) {
  QueuePair& qp = *qps_[i];
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_INIT;
  a.port_num = 1;
  a.qp_access_flags = kAccess;
  if (int err = qp.modify(a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS)) return err;
  a = {};
  a.qp_state = IBV_QPS_RTR;
  a.path_mtu = mtu;
  a.dest_qp_num = remote.qpn;
  a.rq_psn = remote.psn;
  a.max_dest_rd_atomic = 16;
  a.min_rnr_timer = 12;  // perftest's MIN_RNR_TIMER
  a.ah_attr.is_global = 1;
  a.ah_attr.port_num = 1;
  a.ah_attr.grh.hop_limit = 64;
  std::memcpy(a.ah_attr.grh.dgid.raw, remote.gid.bytes.data(), 16);
  if (int err = qp.modify(a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                                 IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
    return err;
  a = {};
  a.qp_state = IBV_QPS_RTS;
  a.sq_psn = psns_[i];
  a.timeout = o.qp_timeout;
  a.retry_cnt = 7;
  a.rnr_retry = 7;
  a.max_rd_atomic = uint8_t(std::min<uint32_t>(remote.out_reads, 16));
  return qp.modify(a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                          IBV_QP_MAX_QP_RD_ATOMIC);
}

}  // namespace uroce::perf
