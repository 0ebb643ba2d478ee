// Test fixture: two devices on a simulated wire with a connected RC QP
// pair, registered buffers on both sides, and helpers to post and wait.
#pragma once

#include <catch2/catch.hpp>

#include <cstring>
#include <memory>
#include <vector>

#include "uroce/sim/sim_fabric.h"
#include "uroce/verbs/verbs.h"

namespace uroce::test {

struct Side {
  Device* dev = nullptr;
  std::unique_ptr<ProtectionDomain> pd;
  std::unique_ptr<CompletionQueue> cq;
  std::unique_ptr<MemoryRegion> mr;
  std::unique_ptr<QueuePair> qp;

  uint8_t* buf() const { return static_cast<uint8_t*>(mr->addr()); }
  uint64_t addr(size_t off = 0) const { return reinterpret_cast<uintptr_t>(mr->addr()) + off; }
};

struct QpOptions {
  ibv_mtu mtu = IBV_MTU_1024;
  uint8_t timeout = 10;  // 4 ms
  uint8_t retry_cnt = 7;
  uint8_t rnr_retry = 7;
  uint8_t min_rnr_timer = 1;
  uint8_t rd_atomic = 16;
  int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
               IBV_ACCESS_REMOTE_ATOMIC;
  uint32_t max_wr = 256;
  uint32_t max_sge = 4;
  uint32_t max_inline = 256;
};

// Drives a QP through INIT, RTR and RTS towards `remote`: nullptr, or the
// state whose modify failed. No Catch assertions, so any thread may call it.
inline const char* try_connect_qp(QueuePair& qp, const Device& remote_dev, uint32_t remote_qpn, uint32_t sq_psn,
                                  uint32_t rq_psn, const QpOptions& o) {
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_INIT;
  a.pkey_index = 0;
  a.port_num = 1;
  a.qp_access_flags = o.access;
  if (qp.modify(a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS) != 0) return "INIT";
  a = {};
  a.qp_state = IBV_QPS_RTR;
  a.path_mtu = o.mtu;
  a.dest_qp_num = remote_qpn;
  a.rq_psn = rq_psn;
  a.max_dest_rd_atomic = o.rd_atomic;
  a.min_rnr_timer = o.min_rnr_timer;
  a.ah_attr.is_global = 1;
  a.ah_attr.port_num = 1;
  std::memcpy(a.ah_attr.grh.dgid.raw, remote_dev.gids()[0].bytes.data(), 16);
  if (qp.modify(a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                       IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER) != 0)
    return "RTR";
  a = {};
  a.qp_state = IBV_QPS_RTS;
  a.sq_psn = sq_psn;
  a.timeout = o.timeout;
  a.retry_cnt = o.retry_cnt;
  a.rnr_retry = o.rnr_retry;
  a.max_rd_atomic = o.rd_atomic;
  if (qp.modify(a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                       IBV_QP_MAX_QP_RD_ATOMIC) != 0)
    return "RTS";
  return nullptr;
}

inline void connect_qp(QueuePair& qp, const Device& remote_dev, uint32_t remote_qpn, uint32_t sq_psn,
                       uint32_t rq_psn, const QpOptions& o) {
  const char* failed = try_connect_qp(qp, remote_dev, remote_qpn, sq_psn, rq_psn, o);
  INFO("modify to " << (failed ? failed : "-") << " failed");
  REQUIRE(failed == nullptr);
}

inline Side make_side(Device& dev, size_t bytes, const QpOptions& o) {
  Side s;
  s.dev = &dev;
  s.pd = dev.alloc_pd();
  int err = 0;
  s.cq = dev.create_cq(4096, err);
  REQUIRE(err == 0);
  s.mr = s.pd->alloc_mr(bytes, o.access, err);
  REQUIRE(err == 0);
  QpInitAttr init;
  init.send_cq = s.cq.get();
  init.recv_cq = s.cq.get();
  init.qp_type = IBV_QPT_RC;
  init.cap.max_send_wr = o.max_wr;
  init.cap.max_recv_wr = o.max_wr;
  init.cap.max_send_sge = o.max_sge;
  init.cap.max_recv_sge = o.max_sge;
  init.cap.max_inline_data = o.max_inline;
  s.qp = s.pd->create_qp(init, err);
  REQUIRE(err == 0);
  return s;
}

struct RcPair {
  explicit RcPair(uint64_t seed = 1, size_t bytes = 1 << 20, QpOptions o = {}, uint16_t mtu = 1500)
      : fabric(seed, mtu) {
    Device& da = fabric.add_device("10.0.0.1");
    Device& db = fabric.add_device("10.0.0.2");
    a = make_side(da, bytes, o);
    b = make_side(db, bytes, o);
    connect_qp(*a.qp, db, b.qp->qp_num(), 0xFFFFF0, 0x000100, o);
    connect_qp(*b.qp, da, a.qp->qp_num(), 0x000100, 0xFFFFF0, o);
  }

  // Waits for n completions on `side`'s CQ (virtual time); returns them.
  std::vector<ibv_wc> wait(Side& side, size_t n, uint64_t max_ns = 5'000'000'000ull) {
    std::vector<ibv_wc> got;
    fabric.run_until(
        [&] {
          ibv_wc wc[16];
          int k;
          while ((k = side.cq->poll(16, wc)) > 0) got.insert(got.end(), wc, wc + k);
          return got.size() >= n;
        },
        max_ns);
    return got;
  }

  sim::SimFabric fabric;
  Side a, b;
};

inline int post_recv(Side& s, uint64_t wr_id, size_t off, uint32_t len) {
  ibv_sge sge{s.addr(off), len, s.mr->lkey()};
  RecvWr wr;
  wr.wr_id = wr_id;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  const RecvWr* bad = nullptr;
  return s.qp->post_recv(&wr, &bad);
}

inline int post_send(Side& s, ibv_wr_opcode op, uint64_t wr_id, size_t off, uint32_t len, uint64_t raddr = 0,
                     uint32_t rkey = 0, unsigned flags = IBV_SEND_SIGNALED) {
  ibv_sge sge{s.addr(off), len, s.mr->lkey()};
  SendWr wr;
  wr.wr_id = wr_id;
  wr.opcode = op;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.send_flags = flags;
  wr.wr.rdma.remote_addr = raddr;
  wr.wr.rdma.rkey = rkey;
  const SendWr* bad = nullptr;
  return s.qp->post_send(&wr, &bad);
}

}  // namespace uroce::test
