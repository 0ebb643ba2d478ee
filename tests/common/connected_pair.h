// SPDX-License-Identifier: BSD-3-Clause
// The one connected-pair fixture of the tests: two ends, each a PD, a CQ, a
// registered buffer, an optional SRQ and one or more QPs on a Device, with
// QP i of one end connected to QP i of the other through the public verbs
// API (RESET -> INIT -> RTR -> RTS with the masks verbs requires).
//
// The devices may run on anything (the simulated wire, a ring pair,
// af_packet, or both ends on one device); the fixture only needs them
// open. Polling stays with the caller, which knows its clock.
#pragma once

#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <vector>

#include "uroce/verbs/verbs.h"

namespace uroce::test {

inline constexpr int kAllAccess = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
                                  IBV_ACCESS_REMOTE_ATOMIC;

// Everything one end is made and connected with.
struct QpOptions {
  ibv_qp_type type = IBV_QPT_RC;  // RC, UC or UD
  ibv_mtu mtu = IBV_MTU_1024;
  uint8_t timeout = 10;  // 4.19 ms
  uint8_t retry_cnt = 7;
  uint8_t rnr_retry = 7;
  uint8_t min_rnr_timer = 1;  // 10 us, what this end asks a requester to wait
  uint8_t max_rd_atomic = 16;
  uint8_t max_dest_rd_atomic = 16;
  int qp_access = kAllAccess;
  int mr_access = kAllAccess;
  uint32_t max_send_wr = 256;
  uint32_t max_recv_wr = 256;  // 0 is used when the QPs are on an SRQ
  uint32_t max_send_sge = 4;
  uint32_t max_recv_sge = 4;
  uint32_t max_inline = 256;
  int sq_sig_all = 0;
  std::optional<cc::CcConfig> cc;  // unset: the device's
  uint32_t sq_psn = 0;             // first PSN this end sends (the peer's rq_psn)
  uint32_t qkey = 0;               // UD
  uint8_t sl = 0;                  // the address vector's (RC, UC) or handle's (UD) service level
  size_t bytes = 1 << 20;          // the registered buffer
  int cq_entries = 4096;           // one CQ for sends and receives of every QP
  uint32_t srq_wr = 0;             // > 0: the QPs receive from one SRQ this deep
  uint32_t srq_sge = 1;
  unsigned num_qps = 1;
  bool cq_channel = false;         // the CQ reports to a completion channel of its own
};

// One end. Members go in reverse order (QPs and AH first, PD last), as
// verbs requires.
struct PairSide {
  Device* dev = nullptr;
  std::unique_ptr<CompletionChannel> channel;  // QpOptions::cq_channel
  std::unique_ptr<ProtectionDomain> pd;
  std::unique_ptr<CompletionQueue> cq;
  std::unique_ptr<MemoryRegion> mr;
  std::unique_ptr<SharedReceiveQueue> srq;
  std::unique_ptr<AddressHandle> ah;  // UD: towards the other end
  std::unique_ptr<QueuePair> qp;      // QP 0
  std::vector<std::unique_ptr<QueuePair>> more_qps;  // QPs 1 .. num_qps-1

  QueuePair& qp_at(size_t i) const { return i == 0 ? *qp : *more_qps.at(i - 1); }
  size_t num_qps() const { return qp ? 1 + more_qps.size() : 0; }
  uint8_t* buf(size_t off = 0) const { return static_cast<uint8_t*>(mr->addr()) + off; }
  uint64_t addr(size_t off = 0) const { return reinterpret_cast<uintptr_t>(mr->addr()) + off; }
  uint32_t key() const { return mr->lkey(); }
  size_t size() const { return mr->length(); }
  ibv_sge sge(size_t off, uint32_t len) const { return ibv_sge{addr(off), len, key()}; }
};

inline std::unique_ptr<QueuePair> make_qp(ProtectionDomain& pd, CompletionQueue* cq, const QpOptions& o,
                                          SharedReceiveQueue* srq = nullptr) {
  QpInitAttr init;
  init.send_cq = cq;
  init.recv_cq = cq;
  init.srq = srq;
  init.qp_type = o.type;
  init.sq_sig_all = o.sq_sig_all;
  init.cap.max_send_wr = o.max_send_wr;
  init.cap.max_recv_wr = srq ? 0 : o.max_recv_wr;
  init.cap.max_send_sge = o.max_send_sge;
  init.cap.max_recv_sge = o.max_recv_sge;
  init.cap.max_inline_data = o.max_inline;
  init.cc = o.cc;
  int err = -1;
  auto qp = pd.create_qp(init, err);
  INFO("create_qp errno " << err);
  REQUIRE(err == 0);
  REQUIRE(qp);
  return qp;
}

// PD, CQ, buffer, SRQ if asked for, QPs: in that order.
inline PairSide make_side(Device& dev, const QpOptions& o) {
  PairSide s;
  s.dev = &dev;
  s.pd = dev.alloc_pd();
  int err = -1;
  if (o.cq_channel) {
    s.channel = dev.create_comp_channel(err);
    REQUIRE(err == 0);
  }
  s.cq = dev.create_cq(o.cq_entries, s.channel.get(), 0, err);
  REQUIRE(err == 0);
  s.mr = s.pd->alloc_mr(o.bytes, o.mr_access, err);
  REQUIRE(err == 0);
  if (o.srq_wr > 0) {
    SrqInitAttr sa;
    sa.max_wr = o.srq_wr;
    sa.max_sge = o.srq_sge;
    s.srq = s.pd->create_srq(sa, err);
    REQUIRE(err == 0);
  }
  s.qp = make_qp(*s.pd, s.cq.get(), o, s.srq.get());
  for (unsigned i = 1; i < o.num_qps; ++i) s.more_qps.push_back(make_qp(*s.pd, s.cq.get(), o, s.srq.get()));
  return s;
}

// The masks of the kernel's qp_state_table (required bits only).
inline constexpr int kRcInitMask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
inline constexpr int kRcRtrMask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                                  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
inline constexpr int kRcRtsMask = IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                                  IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
inline constexpr int kUdInitMask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY;
// UC: RC's without the attributes only acknowledgements use.
inline constexpr int kUcInitMask = kRcInitMask;
inline constexpr int kUcRtrMask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
inline constexpr int kUcRtsMask = IBV_QP_STATE | IBV_QP_SQ_PSN;

inline ibv_qp_attr init_attr(const QpOptions& o) {
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_INIT;
  a.pkey_index = 0;
  a.port_num = 1;
  a.qp_access_flags = o.qp_access;
  a.qkey = o.qkey;
  return a;
}

inline ibv_qp_attr rtr_attr(const QpOptions& o, const Device& remote, uint32_t remote_qpn, uint32_t rq_psn) {
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_RTR;
  a.path_mtu = o.mtu;
  a.dest_qp_num = remote_qpn;
  a.rq_psn = rq_psn;
  a.max_dest_rd_atomic = o.max_dest_rd_atomic;
  a.min_rnr_timer = o.min_rnr_timer;
  a.ah_attr.is_global = 1;
  a.ah_attr.port_num = 1;
  a.ah_attr.sl = o.sl;
  std::memcpy(a.ah_attr.grh.dgid.raw, remote.gids()[0].bytes.data(), 16);
  return a;
}

inline ibv_qp_attr rts_attr(const QpOptions& o) {
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_RTS;
  a.sq_psn = o.sq_psn;
  a.timeout = o.timeout;
  a.retry_cnt = o.retry_cnt;
  a.rnr_retry = o.rnr_retry;
  a.max_rd_atomic = o.max_rd_atomic;
  return a;
}

// Why a bring-up failed: the state whose modify failed and its errno.
struct ConnectError {
  const char* state = nullptr;
  int err = 0;
  explicit operator bool() const { return state != nullptr; }
};

// Drives qp from RESET to RTS. RC and UC: towards remote_qpn on `remote`,
// whose first PSN is rq_psn; UD: with o.qkey (remote and the PSN are not used).
// No Catch assertions, so any thread may call it.
inline ConnectError try_connect(QueuePair& qp, const QpOptions& o, const Device& remote, uint32_t remote_qpn,
                                uint32_t rq_psn) {
  const bool ud = o.type == IBV_QPT_UD, uc = o.type == IBV_QPT_UC;
  if (int e = qp.modify(init_attr(o), ud ? kUdInitMask : kRcInitMask)) return {"INIT", e};
  ibv_qp_attr rtr{};
  rtr.qp_state = IBV_QPS_RTR;
  if (!ud) rtr = rtr_attr(o, remote, remote_qpn, rq_psn);
  if (int e = qp.modify(rtr, ud ? IBV_QP_STATE : uc ? kUcRtrMask : kRcRtrMask)) return {"RTR", e};
  ibv_qp_attr rts = rts_attr(o);
  if (int e = qp.modify(rts, ud || uc ? kUcRtsMask : kRcRtsMask)) return {"RTS", e};
  return {};
}

inline void connect(QueuePair& qp, const QpOptions& o, const Device& remote, uint32_t remote_qpn, uint32_t rq_psn) {
  const ConnectError e = try_connect(qp, o, remote, remote_qpn, rq_psn);
  INFO("modify to " << (e ? e.state : "-") << " failed with errno " << e.err);
  REQUIRE_FALSE(e);
  REQUIRE(qp.state() == IBV_QPS_RTS);
}

inline std::unique_ptr<AddressHandle> make_ah(ProtectionDomain& pd, const Device& remote, uint8_t sl = 0) {
  ibv_ah_attr at{};
  at.sl = sl;
  at.is_global = 1;
  at.port_num = 1;
  at.grh.sgid_index = 0;
  at.grh.hop_limit = 64;
  std::memcpy(at.grh.dgid.raw, remote.gids()[0].bytes.data(), 16);
  int err = -1;
  auto ah = pd.create_ah(at, err);
  REQUIRE(err == 0);
  REQUIRE(ah);
  return ah;
}

// Connects QP i of a with QP i of b, both ways; UD ends get an address
// handle towards each other.
inline void connect_sides(PairSide& a, const QpOptions& oa, PairSide& b, const QpOptions& ob) {
  REQUIRE(a.num_qps() == b.num_qps());
  for (size_t i = 0; i < a.num_qps(); ++i) {
    connect(a.qp_at(i), oa, *b.dev, b.qp_at(i).qp_num(), ob.sq_psn);
    connect(b.qp_at(i), ob, *a.dev, a.qp_at(i).qp_num(), oa.sq_psn);
  }
  if (oa.type == IBV_QPT_UD) a.ah = make_ah(*a.pd, *b.dev, oa.sl);
  if (ob.type == IBV_QPT_UD) b.ah = make_ah(*b.pd, *a.dev, ob.sl);
}

// The fixture: end a on da with oa, end b on db with ob, connected. da and
// db may be one device (its QPs then talk through the engine's loopback).
inline void connect_pair(PairSide& a, Device& da, const QpOptions& oa, PairSide& b, Device& db, const QpOptions& ob) {
  a = make_side(da, oa);
  b = make_side(db, ob);
  connect_sides(a, oa, b, ob);
}

// The options of both ends, the same but for their first PSNs.
inline QpOptions with_psn(QpOptions o, uint32_t sq_psn) {
  o.sq_psn = sq_psn;
  return o;
}

// A work request with one SGE, or none if s is null (s must outlive posting).
inline SendWr make_wr(ibv_wr_opcode op, uint64_t wr_id, ibv_sge* s, unsigned flags = IBV_SEND_SIGNALED) {
  SendWr wr;
  wr.wr_id = wr_id;
  wr.opcode = op;
  wr.sg_list = s;
  wr.num_sge = s ? 1 : 0;
  wr.send_flags = flags;
  return wr;
}

inline int post(PairSide& s, const SendWr& wr) {
  const SendWr* bad = nullptr;
  return s.qp->post_send(&wr, &bad);
}

// op (SEND, WRITE, READ, with or without immediate) of len bytes at off in
// the side's buffer, on its first QP; raddr and rkey for RDMA.
inline int post_wr(PairSide& s, ibv_wr_opcode op, uint64_t wr_id, size_t off, uint32_t len, uint64_t raddr = 0,
                   uint32_t rkey = 0, unsigned flags = IBV_SEND_SIGNALED) {
  ibv_sge sge = s.sge(off, len);
  SendWr wr = make_wr(op, wr_id, &sge, flags);
  wr.wr.rdma.remote_addr = raddr;
  wr.wr.rdma.rkey = rkey;
  return post(s, wr);
}

// One receive of len bytes at off in the side's buffer, on its first QP.
inline int post_recv(PairSide& s, uint64_t wr_id, size_t off, uint32_t len) {
  ibv_sge sge = s.sge(off, len);
  RecvWr wr;
  wr.wr_id = wr_id;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  const RecvWr* bad = nullptr;
  return s.qp->post_recv(&wr, &bad);
}

// An atomic on the side's first QP: the original value lands in the local
// 8 bytes at off.
inline int post_atomic(PairSide& s, ibv_wr_opcode op, uint64_t wr_id, size_t off, uint64_t raddr, uint32_t rkey,
                       uint64_t compare_add, uint64_t swap = 0, unsigned flags = IBV_SEND_SIGNALED) {
  ibv_sge sge = s.sge(off, 8);
  SendWr wr = make_wr(op, wr_id, &sge, flags);
  wr.wr.atomic.remote_addr = raddr;
  wr.wr.atomic.rkey = rkey;
  wr.wr.atomic.compare_add = compare_add;
  wr.wr.atomic.swap = swap;
  return post(s, wr);
}

}  // namespace uroce::test
