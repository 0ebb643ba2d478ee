// SPDX-License-Identifier: BSD-3-Clause
#include "endpoint.h"

#include <cerrno>
#include <cstring>

#include "uroce/port/endpoint.h"

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
  p.gid = dev_->gids()[kAddressGidIndex];
  return p;
}

int Endpoint::connect(size_t i, const PeerInfo& remote, const Options& o, ibv_mtu mtu) {
  RcConnectOptions c;
  c.sq_psn = psns_[i];
  c.path_mtu = mtu;
  c.access = kAccess;
  c.timeout = o.qp_timeout;
  c.max_rd_atomic = uint8_t(std::min<uint32_t>(remote.out_reads, 16));
  c.max_dest_rd_atomic = 16;
  c.min_rnr_timer = 12;  // perftest's MIN_RNR_TIMER
  std::string ignored;   // the caller names the QP and the errno
  return uroce::connect_rc(*qps_[i], {remote.qpn, remote.psn, remote.gid}, c, ignored);
}

}  // namespace uroce::perf
