// Helpers for the verbs/transport tests: two (or more) devices on a
// simulated wire, RC and UD QPs brought up through the public verbs API with
// per-side options, work-request builders and completion waiting in
// virtual time. Independent of rc_pair.h (which other tests own).
#pragma once

#include <arpa/inet.h>

#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "uroce/sim/sim_fabric.h"
#include "uroce/verbs/verbs.h"

namespace uroce::vt {

inline constexpr int kAllAccess = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
                                  IBV_ACCESS_REMOTE_ATOMIC;
inline constexpr uint64_t kSecond = 1'000'000'000ull;

// Everything one side of an RC connection can be given.
struct Opts {
  ibv_mtu mtu = IBV_MTU_1024;
  uint8_t timeout = 10;  // 4.19 ms
  uint8_t retry_cnt = 7;
  uint8_t rnr_retry = 7;
  uint8_t min_rnr_timer = 1;  // 10 us, what this side asks a requester to wait
  uint8_t max_rd_atomic = 16;
  uint8_t max_dest_rd_atomic = 16;
  int qp_access = kAllAccess;
  int mr_access = kAllAccess;
  uint32_t max_send_wr = 256;
  uint32_t max_recv_wr = 256;
  uint32_t max_send_sge = 4;
  uint32_t max_recv_sge = 4;
  uint32_t max_inline = 256;
  int sq_sig_all = 0;
  uint32_t sq_psn = 0;
  size_t bytes = 1 << 20;
};

inline DeviceConfig small_device() {
  DeviceConfig c;
  c.mbufs = 4095;
  return c;
}

// One side: device, PD, CQ, a registered buffer, a QP. Members are
// destroyed in reverse order (QP first, PD last), as verbs requires.
struct Node {
  Device* dev = nullptr;
  std::unique_ptr<ProtectionDomain> pd;
  std::unique_ptr<CompletionQueue> cq;
  std::unique_ptr<MemoryRegion> mr;
  std::unique_ptr<QueuePair> qp;

  uint8_t* buf(size_t off = 0) const { return static_cast<uint8_t*>(mr->addr()) + off; }
  uint64_t addr(size_t off = 0) const { return reinterpret_cast<uintptr_t>(mr->addr()) + off; }
  uint32_t key() const { return mr->lkey(); }
  size_t size() const { return mr->length(); }
};

inline std::unique_ptr<QueuePair> make_rc_qp(ProtectionDomain& pd, CompletionQueue* cq, const Opts& o,
                                             SharedReceiveQueue* srq = nullptr, ibv_qp_type type = IBV_QPT_RC) {
  QpInitAttr init;
  init.send_cq = cq;
  init.recv_cq = cq;
  init.srq = srq;
  init.qp_type = type;
  init.sq_sig_all = o.sq_sig_all;
  init.cap.max_send_wr = o.max_send_wr;
  init.cap.max_recv_wr = srq ? 0 : o.max_recv_wr;
  init.cap.max_send_sge = o.max_send_sge;
  init.cap.max_recv_sge = o.max_recv_sge;
  init.cap.max_inline_data = o.max_inline;
  int err = -1;
  auto qp = pd.create_qp(init, err);
  REQUIRE(err == 0);
  REQUIRE(qp);
  return qp;
}

inline Node make_node(Device& dev, const Opts& o) {
  Node n;
  n.dev = &dev;
  n.pd = dev.alloc_pd();
  int err = -1;
  n.cq = dev.create_cq(8192, err);
  REQUIRE(err == 0);
  n.mr = n.pd->alloc_mr(o.bytes, o.mr_access, err);
  REQUIRE(err == 0);
  n.qp = make_rc_qp(*n.pd, n.cq.get(), o);
  return n;
}

// The masks of the kernel's qp_state_table (required bits only).
inline constexpr int kRcInitMask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
inline constexpr int kRcRtrMask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                                  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
inline constexpr int kRcRtsMask = IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                                  IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;

inline ibv_qp_attr init_attr(const Opts& o) {
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_INIT;
  a.pkey_index = 0;
  a.port_num = 1;
  a.qp_access_flags = o.qp_access;
  return a;
}

inline ibv_qp_attr rtr_attr(const Opts& o, const Device& remote, uint32_t remote_qpn, uint32_t rq_psn) {
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_RTR;
  a.path_mtu = o.mtu;
  a.dest_qp_num = remote_qpn;
  a.rq_psn = rq_psn;
  a.max_dest_rd_atomic = o.max_dest_rd_atomic;
  a.min_rnr_timer = o.min_rnr_timer;
  a.ah_attr.is_global = 1;
  a.ah_attr.port_num = 1;
  std::memcpy(a.ah_attr.grh.dgid.raw, remote.gids()[0].bytes.data(), 16);
  return a;
}

inline ibv_qp_attr rts_attr(const Opts& o) {
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_RTS;
  a.sq_psn = o.sq_psn;
  a.timeout = o.timeout;
  a.retry_cnt = o.retry_cnt;
  a.rnr_retry = o.rnr_retry;
  a.max_rd_atomic = o.max_rd_atomic;
  return a;
}

// RESET -> INIT -> RTR -> RTS towards a remote QP whose first PSN is rq_psn.
inline void connect(QueuePair& qp, const Opts& o, const Device& remote, uint32_t remote_qpn, uint32_t rq_psn) {
  REQUIRE(qp.modify(init_attr(o), kRcInitMask) == 0);
  REQUIRE(qp.modify(rtr_attr(o, remote, remote_qpn, rq_psn), kRcRtrMask) == 0);
  REQUIRE(qp.modify(rts_attr(o), kRcRtsMask) == 0);
  REQUIRE(qp.state() == IBV_QPS_RTS);
}

inline std::vector<ibv_wc> drain(CompletionQueue& cq) {
  std::vector<ibv_wc> got;
  ibv_wc wc[32];
  int k;
  while ((k = cq.poll(32, wc)) > 0) got.insert(got.end(), wc, wc + k);
  return got;
}

// Runs the fabric until `n` completions were polled from `cq` (or max_ns of
// virtual time passed / nothing can happen any more).
inline std::vector<ibv_wc> wait_cq(sim::SimFabric& f, CompletionQueue& cq, size_t n, uint64_t max_ns = 5 * kSecond) {
  std::vector<ibv_wc> got;
  f.run_until(
      [&] {
        auto more = drain(cq);
        got.insert(got.end(), more.begin(), more.end());
        return got.size() >= n;
      },
      max_ns);
  return got;
}

// Two devices (10.0.0.1 = a, 10.0.0.2 = b) with a connected RC QP each.
// a sends from PSN 0xFFFFF0 by default, so every test crosses the 2^24 wrap.
struct Pair {
  explicit Pair(uint64_t seed_ = 1, Opts oa = default_a(), Opts ob = default_b(), uint16_t mtu = 1500,
                const char* ip_a = "10.0.0.1", const char* ip_b = "10.0.0.2")
      : seed(seed_), fabric(seed_, mtu), optsa(oa), optsb(ob) {
    Device& da = fabric.add_device(ip_a, small_device());
    Device& db = fabric.add_device(ip_b, small_device());
    a = make_node(da, oa);
    b = make_node(db, ob);
    connect(*a.qp, oa, db, b.qp->qp_num(), ob.sq_psn);
    connect(*b.qp, ob, da, a.qp->qp_num(), oa.sq_psn);
  }
  static Opts default_a() {
    Opts o;
    o.sq_psn = 0xFFFFF0;
    return o;
  }
  static Opts default_b() {
    Opts o;
    o.sq_psn = 0x000100;
    return o;
  }

  std::vector<ibv_wc> wait(Node& n, size_t count, uint64_t max_ns = 5 * kSecond) {
    return wait_cq(fabric, *n.cq, count, max_ns);
  }
  void run_for(uint64_t ns) { fabric.run_for(ns); }
  uint64_t now() { return fabric.clock().now_ns(); }
  sim::SimPort& port_a() { return fabric.port(0); }
  sim::SimPort& port_b() { return fabric.port(1); }

  uint64_t seed;
  sim::SimFabric fabric;
  Opts optsa, optsb;
  Node a, b;
};

// Fills [p, p+n) with a pattern that depends on `salt`.
inline void fill(uint8_t* p, size_t n, uint32_t salt) {
  for (size_t i = 0; i < n; ++i) p[i] = uint8_t((i * 131 + salt * 7 + (i >> 8)) ^ salt);
}

inline ibv_sge sge(const Node& n, size_t off, uint32_t len) { return ibv_sge{n.addr(off), len, n.key()}; }

inline int post_recv(Node& n, uint64_t wr_id, size_t off, uint32_t len) {
  ibv_sge s = sge(n, off, len);
  RecvWr wr;
  wr.wr_id = wr_id;
  wr.sg_list = &s;
  wr.num_sge = 1;
  const RecvWr* bad = nullptr;
  return n.qp->post_recv(&wr, &bad);
}

// A one-SGE send work request (the SGE lives in *s, which must outlive posting).
inline SendWr make_wr(ibv_wr_opcode op, uint64_t wr_id, ibv_sge* s, unsigned flags = IBV_SEND_SIGNALED) {
  SendWr wr;
  wr.wr_id = wr_id;
  wr.opcode = op;
  wr.sg_list = s;
  wr.num_sge = s ? 1 : 0;
  wr.send_flags = flags;
  return wr;
}

inline int post(Node& n, const SendWr& wr) {
  const SendWr* bad = nullptr;
  return n.qp->post_send(&wr, &bad);
}

inline int post_rdma(Node& n, ibv_wr_opcode op, uint64_t wr_id, size_t off, uint32_t len, uint64_t raddr,
                     uint32_t rkey, unsigned flags = IBV_SEND_SIGNALED) {
  ibv_sge s = sge(n, off, len);
  SendWr wr = make_wr(op, wr_id, &s, flags);
  wr.wr.rdma.remote_addr = raddr;
  wr.wr.rdma.rkey = rkey;
  return post(n, wr);
}

inline int post_send(Node& n, uint64_t wr_id, size_t off, uint32_t len, unsigned flags = IBV_SEND_SIGNALED) {
  ibv_sge s = sge(n, off, len);
  return post(n, make_wr(IBV_WR_SEND, wr_id, &s, flags));
}

// Atomic: the original value lands in the local 8 bytes at `off`.
inline int post_atomic(Node& n, ibv_wr_opcode op, uint64_t wr_id, size_t off, uint64_t raddr, uint32_t rkey,
                       uint64_t compare_add, uint64_t swap = 0, unsigned flags = IBV_SEND_SIGNALED) {
  ibv_sge s = sge(n, off, 8);
  SendWr wr = make_wr(op, wr_id, &s, flags);
  wr.wr.atomic.remote_addr = raddr;
  wr.wr.atomic.rkey = rkey;
  wr.wr.atomic.compare_add = compare_add;
  wr.wr.atomic.swap = swap;
  return post(n, wr);
}

inline uint64_t load64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}
inline void store64(uint8_t* p, uint64_t v) { std::memcpy(p, &v, 8); }

}  // namespace uroce::vt
