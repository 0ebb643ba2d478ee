// SPDX-License-Identifier: BSD-3-Clause
#include "context.h"
#include "qp_setup.h"
#include "work_requests.h"

#include <cstring>

#include "uroce/port/endpoint.h"

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
  c->cq_ = create_cq(dev, int(o.rx_depth + 1), o, c->channel_, error);
  if (!c->cq_) return nullptr;
  // uc_pingpong is rc_pingpong on a UC QP: the same buffers, exchange and loop.
  const ibv_qp_type type = o.mode == Mode::uc ? IBV_QPT_UC : IBV_QPT_RC;
  c->qp_ = create_qp(*c->pd_, *c->cq_, type, nullptr, o.rx_depth, o.size, c->send_flags_, err);
  if (!c->qp_) return error = errno_text("couldn't create QP", err), nullptr;
  if (int e = modify_to_init(*c->qp_, type, uint8_t(o.ib_port)))
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
    return error = std::string("the peer sent no GID (GID ::): start ") +
                   (o_->mode == Mode::uc ? "ibv_uc_pingpong" : "ibv_rc_pingpong") + " with -g IDX on a RoCE device",
           false;
  std::string e;
  if (uroce::connect_rc(*qp_, {remote.qpn, remote.psn, remote.gid}, rc_options(*o_, my_psn), e))
    return error = "failed to " + e, false;
  return true;
}

}  // namespace uroce::pingpong
