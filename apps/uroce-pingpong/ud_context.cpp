// SPDX-License-Identifier: BSD-3-Clause
#include "ud_context.h"
#include "qp_setup.h"
#include "work_requests.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

namespace uroce::pingpong {
namespace {

// The source address in a GRH slot: the IPv6 header's (bytes 8..23), or for
// IPv4 the header at byte 20 (its source at 20 + 12) as a v4-mapped GID.
wire::IpAddr grh_source(const uint8_t* grh) {
  if ((grh[20] >> 4) == 4 && std::all_of(grh, grh + 20, [](uint8_t b) { return b == 0; }))
    return wire::IpAddr::from_v4(grh + 32);
  return wire::IpAddr::from_v6(grh + 8);
}

}  // namespace

std::unique_ptr<UdContext> UdContext::create(Device& dev, const Options& o, bool client, std::string& error) {
  std::unique_ptr<UdContext> c(new UdContext());
  c->o_ = &o;
  c->size_ = o.size;
  c->pd_ = dev.alloc_pd();
  int err = 0;
  const uint64_t one = uint64_t(o.size) + kGrhBytes;
  const uint64_t bytes = client ? 2 * one : one;
  c->mr_ = alloc_buffer(*c->pd_, bytes, error);
  if (!c->mr_) return nullptr;
  c->rx_ = static_cast<uint8_t*>(c->mr_->addr());
  c->tx_ = (client ? c->rx_ + one : c->rx_) + kGrhBytes;
  std::memset(c->rx_, 0x7b, bytes);  // ud_pingpong's fill
  c->cq_ = create_cq(dev, int(o.rx_depth + 1), o, c->channel_, error);
  if (!c->cq_) return nullptr;
  c->qp_ = create_qp(*c->pd_, *c->cq_, IBV_QPT_UD, nullptr, o.rx_depth, o.size, c->send_flags_, err);
  if (!c->qp_) return error = errno_text("couldn't create QP", err), nullptr;
  if (int e = modify_to_init(*c->qp_, IBV_QPT_UD, uint8_t(o.ib_port), kUdQkey))
    return error = errno_text("failed to modify QP to INIT", e), nullptr;
  return c;
}

UdContext::~UdContext() {
  qp_.reset();
  ah_.reset();
  if (mr_) pd_->dereg_mr(mr_);
}

int UdContext::post_recv(int n) {
  ibv_sge sge{reinterpret_cast<uintptr_t>(rx_), size_ + kGrhBytes, mr_->lkey()};
  return post_recvs(*qp_, sge, n);
}

int UdContext::post_send() {
  ibv_sge sge{reinterpret_cast<uintptr_t>(tx_), size_, mr_->lkey()};
  SendWr wr = send_wr(sge, send_flags_);
  wr.wr.ud.ah = ah_.get();
  wr.wr.ud.remote_qpn = remote_.qpn;
  wr.wr.ud.remote_qkey = kUdQkey;
  return post(*qp_, wr);
}

bool UdContext::check_recv(const ibv_wc& wc, std::string& why) {
  if (!(wc.wc_flags & IBV_WC_GRH)) return why = "completion without IBV_WC_GRH", false;
  if (wc.src_qp != remote_.qpn) {
    char buf[80];
    std::snprintf(buf, sizeof buf, "from QPN 0x%06x, expected the peer's 0x%06x", wc.src_qp, remote_.qpn);
    return why = buf, false;
  }
  const wire::IpAddr src = grh_source(rx_);
  if (src != remote_.gid) return why = "GRH source " + src.to_string() + ", expected " + remote_.gid.to_string(), false;
  return true;
}

bool UdContext::connect(const exchange::PingpongDest& remote, uint32_t my_psn, std::string& error) {
  // ud_pingpong builds a global AH only from a non-zero GID; RoCE needs one.
  if (remote.gid == wire::IpAddr{})
    return error = "the peer sent no GID (GID ::): start ibv_ud_pingpong with -g IDX on a RoCE device", false;
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_RTR;
  if (int e = qp_->modify(a, IBV_QP_STATE)) return error = errno_text("failed to modify QP to RTR", e), false;
  a.qp_state = IBV_QPS_RTS;
  a.sq_psn = my_psn;
  if (int e = qp_->modify(a, IBV_QP_STATE | IBV_QP_SQ_PSN))
    return error = errno_text("failed to modify QP to RTS", e), false;
  const ibv_ah_attr ah = roce_address(remote.gid, rc_options(*o_, my_psn));
  int err = 0;
  ah_ = pd_->create_ah(ah, err);
  if (!ah_) return error = errno_text("failed to create AH", err), false;
  remote_ = remote;
  return true;
}

}  // namespace uroce::pingpong
