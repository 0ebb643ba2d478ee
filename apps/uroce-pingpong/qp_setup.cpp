// SPDX-License-Identifier: BSD-3-Clause
#include "qp_setup.h"

#include <cstring>

namespace uroce::pingpong {

std::string errno_text(const std::string& what, int err) { return what + ": " + std::strerror(err); }

std::unique_ptr<MemoryRegion> alloc_buffer(ProtectionDomain& pd, uint64_t bytes, std::string& error) {
  int err = 0;
  std::unique_ptr<MemoryRegion> mr = pd.alloc_mr(bytes, IBV_ACCESS_LOCAL_WRITE, err);
  if (!mr)
    error = errno_text("couldn't register MR", err) + " (" + std::to_string(bytes) +
            " bytes of DPDK memory; give EAL more with --eal \"-m MB\")";
  return mr;
}

std::unique_ptr<CompletionQueue> create_cq(Device& dev, int cqe, const Options& o,
                                           std::unique_ptr<CompletionChannel>& channel, std::string& error) {
  int err = 0;
  if (o.events && !(channel = dev.create_comp_channel(err)))
    return error = errno_text("couldn't create completion channel", err), nullptr;
  auto cq = dev.create_cq(cqe, channel.get(), 0, err);
  if (!cq) error = errno_text("couldn't create CQ", err);
  return cq;
}

std::unique_ptr<QueuePair> create_qp(ProtectionDomain& pd, CompletionQueue& cq, ibv_qp_type type,
                                     SharedReceiveQueue* srq, uint32_t max_recv_wr, uint32_t size,
                                     unsigned& send_flags, int& err) {
  QpInitAttr init;
  init.send_cq = init.recv_cq = &cq;
  init.srq = srq;
  init.qp_type = type;
  init.cap.max_send_wr = 1;
  init.cap.max_send_sge = 1;
  if (!srq) {
    init.cap.max_recv_wr = max_recv_wr;
    init.cap.max_recv_sge = 1;
  }
  std::unique_ptr<QueuePair> qp = pd.create_qp(init, err);
  if (!qp) return nullptr;
  ibv_qp_attr attr{};
  if (qp->query(attr, IBV_QP_CAP, init) == 0 && init.cap.max_inline_data >= size) send_flags |= IBV_SEND_INLINE;
  return qp;
}

int modify_to_init(QueuePair& qp, ibv_qp_type type, uint8_t port, uint32_t qkey) {
  ibv_qp_attr attr{};
  attr.qp_state = IBV_QPS_INIT;
  attr.pkey_index = 0;
  attr.port_num = port;
  int mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;
  if (type == IBV_QPT_UD) {
    attr.qkey = qkey;
    mask |= IBV_QP_QKEY;
  } else {
    attr.qp_access_flags = 0;
    mask |= IBV_QP_ACCESS_FLAGS;
  }
  return qp.modify(attr, mask);
}

RcConnectOptions rc_options(const Options& o, uint32_t my_psn) {
  RcConnectOptions r;
  r.sq_psn = my_psn;
  r.path_mtu = o.mtu_enum;
  r.port_num = uint8_t(o.ib_port);
  r.sgid_index = uint8_t(o.gid_idx);
  r.sl = uint8_t(o.sl);
  r.hop_limit = 64;
  r.max_rd_atomic = 1;
  r.max_dest_rd_atomic = 1;
  return r;
}

}  // namespace uroce::pingpong
