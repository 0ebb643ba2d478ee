// SPDX-License-Identifier: BSD-3-Clause
#include "engine_rig.h"

#include <rte_mempool.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "../common/mbuf_test_util.h"
#include "transport/psn.h"
#include "transport/qp.h"
#include "memory/region.h"
#include "verbs/access.h"

namespace uroce::fuzz {

void check_failed(const char* file, int line, const char* what) {
  std::fprintf(stderr, "fuzz_engine: check failed at %s:%d: %s\n", file, line, what);
  std::abort();
}

namespace {

constexpr int kAll = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
constexpr int kMw = IBV_ACCESS_MW_BIND;  // every region takes window binds (their rules decide)

struct RegionSpec {
  size_t len, lead;
  int access;
};
constexpr std::array<RegionSpec, kRegions> kRegionSpecs = {{
    {3 * 4096, 0, kAll | kMw},
    {1000, 24, kAll | kMw},
    {2048, 0, IBV_ACCESS_REMOTE_READ | kMw},
    {64, 8, kAll | kMw},
    {4096, 0, kAll | kMw},
    {4096, 40, kAll | kMw},
}};

uint8_t fill_seed(int s, int r) { return uint8_t(0x10 + s * 0x40 + r * 7); }

// Mapped once per process: mmap and mprotect per input would dominate.
GuardedBuffer& buffer(int s, int r) {
  static std::array<std::array<std::unique_ptr<GuardedBuffer>, kRegions>, 2> bufs;
  auto& b = bufs[s][r];
  if (!b) b = std::make_unique<GuardedBuffer>(kRegionSpecs[r].len, kRegionSpecs[r].lead);
  return *b;
}

rte_mempool* g_pool = nullptr;

// First PSNs: some just below the 2^24 wrap.
uint32_t first_psn(int s, int i) { return i % 3 == 0 ? 0xFFFFF8u + uint32_t(i) : 0x1000u * uint32_t(i + 1) + 0x100u * uint32_t(s); }

constexpr int kInitMask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
constexpr int kRcRtrMask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                           IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
constexpr int kUcRtrMask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
constexpr int kRcRtsMask =
    IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;

}  // namespace

void set_inject_pool(rte_mempool* p) { g_pool = p; }
rte_mempool* EngineRig::pool() const { return g_pool; }

EngineRig::EngineRig() {
  fabric_ = std::make_unique<sim::SimFabric>(1, 9000);
  const char* ip4[2] = {"10.0.0.1", "10.0.0.2"};
  const char* ip6[2] = {"fd00::1", "fd00::2"};
  for (int s = 0; s < 2; ++s) {
    DeviceConfig c;
    c.mbufs = 1023;
    c.limits.max_mr = 16;  // the key table's free list is made per device, per input
    c.seed = 0xF0 + uint64_t(s);
    wire::IpAddr v6;
    wire::IpAddr::parse(ip6[s], v6);
    c.gids = {v6};
    sides_[s].dev = &fabric_->add_device(ip4[s], c);
  }
  // The IPv6 GIDs' neighbours (add_device knows GID 0 only).
  for (int s = 0; s < 2; ++s)
    for (int o = 0; o < 2; ++o) sides_[s].dev->add_neighbor(sides_[o].dev->gids()[1], fabric_->port(size_t(o)).mac());
  injector_ = &fabric_->wire().add_port(wire::MacAddr{{0x02, 0, 0, 0, 0, 0x99}}, 9000);
  for (int s = 0; s < 2; ++s) make_side(s);
}

void EngineRig::begin() {
  for (int s = 0; s < 2; ++s) {
    Side& d = sides_[s];
    for (int r = 0; r < kRegions; ++r) d.buf[r]->fill(fill_seed(s, r));
    SrqInitAttr sa;
    sa.max_wr = 64;
    sa.max_sge = 2;
    int err = 0;
    d.srq = d.pd->create_srq(sa, err);
    ENGINE_FUZZ_CHECK(d.srq && err == 0);
  }
  make_qps();
  for (int s = 0; s < 2; ++s) bind_window(s);
}

// A BIND_MW of the side's first window through its QP 0 (RC, RTS), run
// and completed before the input's first step.
void EngineRig::bind_window(int s) {
  Side& d = sides_[s];
  SendWr wr;
  wr.wr_id = 0;  // the rig's own: post_send numbers the input's from 1
  wr.opcode = IBV_WR_BIND_MW;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.bind_mw.mw = d.mw[0].get();
  wr.bind_mw.rkey = d.mw_key[0];
  wr.bind_mw.bind_info.mr = d.mr[kRw].get();
  wr.bind_mw.bind_info.addr = reinterpret_cast<uintptr_t>(d.buf[kRw]->data()) + kWindowOff;
  wr.bind_mw.bind_info.length = kWindowLen;
  wr.bind_mw.bind_info.mw_access_flags = IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC;
  const SendWr* bad = nullptr;
  ENGINE_FUZZ_CHECK(d.qps[0].qp->post_send(&wr, &bad) == 0);
  run_for(10'000);
  ibv_wc wc[2];
  ENGINE_FUZZ_CHECK(d.cq->poll(2, wc) == 1);
  ENGINE_FUZZ_CHECK(wc[0].wr_id == 0 && wc[0].status == IBV_WC_SUCCESS && wc[0].opcode == IBV_WC_BIND_MW);
}

void EngineRig::make_side(int s) {
  Side& d = sides_[s];
  int err = 0;
  d.pd = d.dev->alloc_pd();
  d.pd2 = d.dev->alloc_pd();
  d.cq = d.dev->create_cq(512, err);
  ENGINE_FUZZ_CHECK(d.cq && err == 0);
  for (int r = 0; r < kRegions; ++r) {
    GuardedBuffer& b = buffer(s, r);
    b.fill(fill_seed(s, r));
    d.buf[r] = &b;
    ProtectionDomain& pd = r == kOtherPd ? *d.pd2 : *d.pd;
    d.mr[r] = pd.reg_mr(b.data(), b.size(), kRegionSpecs[r].access, err);
    ENGINE_FUZZ_CHECK(d.mr[r] && err == 0);
    d.key[r] = d.mr[r]->rkey();
  }
  ENGINE_FUZZ_CHECK(d.pd->dereg_mr(d.mr[kStale]) == 0);
  for (int w = 0; w < 2; ++w) {
    d.mw[size_t(w)] = (w == 0 ? *d.pd : *d.pd2).alloc_mw(IBV_MW_TYPE_2, err);
    ENGINE_FUZZ_CHECK(d.mw[size_t(w)] && err == 0);
  }
  d.mw_key[0] = (d.mw[0]->rkey() & ~0xFFu) | kWindowConsumerKey;
  d.mw_key[1] = d.mw[1]->rkey();
  for (int g = 0; g < 2; ++g) {
    ibv_ah_attr at{};
    at.is_global = 1;
    at.port_num = 1;
    at.grh.sgid_index = uint8_t(g);
    at.grh.hop_limit = 64;
    std::memcpy(at.grh.dgid.raw, sides_[1 - s].dev->gids()[size_t(g)].bytes.data(), 16);
    d.ah[size_t(g)] = d.pd->create_ah(at, err);
    ENGINE_FUZZ_CHECK(d.ah[size_t(g)] && err == 0);
  }
}

void EngineRig::make_qps() {
  for (int s = 0; s < 2; ++s) {
    Side& d = sides_[s];
    for (int i = 0; i < int(kQpSpecs.size()); ++i) {
      const QpSpec& spec = kQpSpecs[size_t(i)];
      QpInitAttr ia;
      ia.send_cq = ia.recv_cq = d.cq.get();
      ia.srq = spec.srq ? d.srq.get() : nullptr;
      ia.qp_type = spec.type;
      ia.sq_sig_all = 1;
      ia.cap.max_send_wr = 32;
      ia.cap.max_recv_wr = spec.srq ? 0 : 32;
      ia.cap.max_send_sge = 3;
      ia.cap.max_recv_sge = 3;
      ia.cap.max_inline_data = 64;
      int err = 0;
      QpRec r;
      r.qp = d.pd->create_qp(ia, err);
      ENGINE_FUZZ_CHECK(r.qp && err == 0);
      r.spec = spec;
      r.side = r.peer_side = s;
      r.index = r.peer_index = i;
      if (spec.loop_peer >= 0) r.peer_index = spec.loop_peer;
      else r.peer_side = 1 - s;
      r.sq_psn = first_psn(s, i);
      d.qps.push_back(std::move(r));
    }
  }
  for (int s = 0; s < 2; ++s) {
    for (QpRec& r : sides_[s].qps) {
      const ibv_qp_state want = s == 0 || r.spec.loop_peer >= 0 ? IBV_QPS_RTS : r.spec.state_side1;
      if (want == IBV_QPS_RESET) continue;
      const QpRec& peer = sides_[r.peer_side].qps[size_t(r.peer_index)];
      const ibv_qp_state upto = want == IBV_QPS_INIT || want == IBV_QPS_RTR ? want : IBV_QPS_RTS;
      ENGINE_FUZZ_CHECK(connect(r, r.sq_psn, peer.sq_psn, upto) == 0);
      ENGINE_FUZZ_CHECK(r.qp->state() == upto);
      if (want == IBV_QPS_ERR || want == IBV_QPS_SQD) {
        ibv_qp_attr a{};
        a.qp_state = want;
        ENGINE_FUZZ_CHECK(modify(s, r.index, a, IBV_QP_STATE) == 0);
      }
    }
  }
}

// RESET -> INIT -> RTR -> RTS, or up to `upto`.
int EngineRig::connect(QpRec& r, uint32_t sq_psn, uint32_t rq_psn, ibv_qp_state upto) {
  const bool ud = r.spec.type == IBV_QPT_UD, uc = r.spec.type == IBV_QPT_UC;
  const QpRec& peer = sides_[r.peer_side].qps[size_t(r.peer_index)];
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_INIT;
  a.port_num = 1;
  a.qp_access_flags = kAll;
  a.qkey = kQkey;
  if (int e = modify(r.side, r.index, a, ud ? (kInitMask & ~IBV_QP_ACCESS_FLAGS) | IBV_QP_QKEY : kInitMask)) return e;
  if (upto == IBV_QPS_INIT) return 0;
  a = {};
  a.qp_state = IBV_QPS_RTR;
  int mask = IBV_QP_STATE;
  if (!ud) {
    a.path_mtu = r.spec.mtu;
    a.dest_qp_num = peer.qp->qp_num();
    a.rq_psn = rq_psn;
    a.max_dest_rd_atomic = 4;
    a.min_rnr_timer = 1;
    a.ah_attr.is_global = 1;
    a.ah_attr.port_num = 1;
    a.ah_attr.grh.sgid_index = r.spec.sgid;
    a.ah_attr.grh.hop_limit = 64;
    std::memcpy(a.ah_attr.grh.dgid.raw, sides_[r.peer_side].dev->gids()[r.spec.sgid].bytes.data(), 16);
    mask = uc ? kUcRtrMask : kRcRtrMask;
  }
  if (int e = modify(r.side, r.index, a, mask)) return e;
  if (upto == IBV_QPS_RTR) return 0;
  a = {};
  a.qp_state = IBV_QPS_RTS;
  a.sq_psn = sq_psn;
  a.timeout = 8;  // ~1 ms
  a.retry_cnt = 3;
  a.rnr_retry = 3;
  a.max_rd_atomic = 4;
  return modify(r.side, r.index, a, ud || uc ? IBV_QP_STATE | IBV_QP_SQ_PSN : kRcRtsMask);
}

void EngineRig::reconnect(int s, int q, uint32_t sq_psn_delta) {
  QpRec& r = sides_[s].qps[size_t(q)];
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_RESET;
  if (modify(s, q, a, IBV_QP_STATE) != 0) return;
  const QpRec& peer = sides_[r.peer_side].qps[size_t(r.peer_index)];
  (void)connect(r, transport::psn_add(r.sq_psn, sq_psn_delta), peer.sq_psn, IBV_QPS_RTS);
}

void EngineRig::inject(const uint8_t* frame, size_t len, uint16_t seg_len) {
  const uint16_t room = rte_pktmbuf_data_room_size(g_pool) - RTE_PKTMBUF_HEADROOM;
  if (seg_len == 0 || seg_len > room) seg_len = len > room ? room : 0;
  const size_t segs = seg_len ? (len + seg_len - 1) / seg_len : 1;
  if (len == 0 || rte_mempool_avail_count(g_pool) < segs + 8) return;
  rte_mbuf* m = test::mbuf_from_bytes(g_pool, {frame, len}, seg_len);
  if (injector_->tx_burst(&m, 1) != 1) rte_pktmbuf_free(m);
}

void EngineRig::run_for(uint64_t ns) { fabric_->run_for(ns); }

int EngineRig::post_send(int s, int q, SendWr& wr) {
  wr.wr_id = next_wr_id_++;
  wr.next = nullptr;
  const SendWr* bad = nullptr;
  const int rc = sides_[s].qps[size_t(q)].qp->post_send(&wr, &bad);
  if (rc == 0) posted_[wr.wr_id] = {s, q, false, 0};
  return rc;
}

int EngineRig::post_recv(int s, int q, RecvWr& wr) {
  wr.wr_id = next_wr_id_++;
  wr.next = nullptr;
  uint64_t len = 0;
  for (int i = 0; i < wr.num_sge; ++i) len += wr.sg_list[i].length;
  const RecvWr* bad = nullptr;
  const int rc = q < 0 ? sides_[s].srq->post_recv(&wr, &bad) : sides_[s].qps[size_t(q)].qp->post_recv(&wr, &bad);
  if (rc == 0) posted_[wr.wr_id] = {s, q, true, len};
  return rc;
}

int EngineRig::modify(int s, int q, const ibv_qp_attr& a, int mask) {
  QpRec& r = sides_[s].qps[size_t(q)];
  const bool to_reset = (mask & IBV_QP_STATE) && a.qp_state == IBV_QPS_RESET;
  // RESET discards work requests without completions: take what the CQ
  // holds first, and forget what is left afterwards.
  if (to_reset) poll_cqs(1 << 20);
  const int rc = r.qp->modify(a, mask);
  if (rc != 0) return rc;
  if (mask & IBV_QP_STATE) ENGINE_FUZZ_CHECK(r.qp->state() == a.qp_state);
  r.expect = r.qp->state();
  if (to_reset) {
    // A receive it had taken from an SRQ goes with it, uncompleted.
    if (r.spec.srq) srq_reset_[size_t(s)] = true;
    poll_cqs(1 << 20);
    for (auto it = posted_.begin(); it != posted_.end();) {
      if (it->second.side == s && it->second.qp == q) it = posted_.erase(it);
      else ++it;
    }
  }
  return 0;
}

void EngineRig::poll_cqs(int max) {
  ibv_wc wc[16];
  for (int s = 0; s < 2; ++s) {
    int left = max;
    while (left > 0) {
      const int n = sides_[s].cq->poll(left < 16 ? left : 16, wc);
      ENGINE_FUZZ_CHECK(n >= 0 && n <= 16);
      for (int i = 0; i < n; ++i) check_completion(s, wc[i]);
      if (n == 0) break;
      left -= n;
    }
  }
}

void EngineRig::check_completion(int s, const ibv_wc& wc) {
  const auto it = posted_.find(wc.wr_id);
  if (it == posted_.end())
    std::fprintf(stderr, "fuzz_engine: completion for wr_id %llu (status %d, qp 0x%x): never posted or already completed\n",
                 (unsigned long long)wc.wr_id, int(wc.status), wc.qp_num);
  ENGINE_FUZZ_CHECK(it != posted_.end());
  const Posted p = it->second;
  posted_.erase(it);
  ENGINE_FUZZ_CHECK(p.side == s);
  if (p.qp >= 0) {
    ENGINE_FUZZ_CHECK(wc.qp_num == sides_[s].qps[size_t(p.qp)].qp->qp_num());
  } else {
    bool on_srq = false;
    for (const QpRec& r : sides_[s].qps) on_srq |= r.spec.srq && r.qp->qp_num() == wc.qp_num;
    ENGINE_FUZZ_CHECK(on_srq);
  }
  // The opcode and length of an unsuccessful completion are undefined.
  if (wc.status != IBV_WC_SUCCESS) return;
  ENGINE_FUZZ_CHECK(bool(wc.opcode & IBV_WC_RECV) == p.recv);
  // A SEND's bytes land in the receive's SGEs; a WRITE with immediate's
  // byte_len counts what it wrote to its RETH address instead.
  if (p.recv && wc.opcode == IBV_WC_RECV) ENGINE_FUZZ_CHECK(wc.byte_len <= p.len);
}

void EngineRig::check_qp(QpRec& r) {
  const ibv_qp_state st = r.qp->state();
  ENGINE_FUZZ_CHECK(st >= IBV_QPS_RESET && st <= IBV_QPS_ERR);
  if (st != r.expect) {
    // On its own the transport only ever gives up: RC/UC to ERR, UC/UD
    // send queue errors to SQE.
    const bool to_err = st == IBV_QPS_ERR && r.expect != IBV_QPS_RESET;
    const bool to_sqe = st == IBV_QPS_SQE && r.spec.type != IBV_QPT_RC &&
                        (r.expect == IBV_QPS_RTS || r.expect == IBV_QPS_SQD);
    if (!(to_err || to_sqe))
      std::fprintf(stderr, "fuzz_engine: side %d QP %d went from state %d to %d by itself\n", r.side, r.index,
                   int(r.expect), int(st));
    ENGINE_FUZZ_CHECK(to_err || to_sqe);
    r.expect = st;
  }
  if (r.spec.type != IBV_QPT_RC || (st != IBV_QPS_RTS && st != IBV_QPS_SQD)) return;
  // Nothing acknowledged or to be sent lies past what was ever sent.
  const transport::Qp& q = detail::to_qp(*r.qp);
  ENGINE_FUZZ_CHECK(transport::psn_le(q.comp.una, q.req.max_psn));
  ENGINE_FUZZ_CHECK(transport::psn_le(q.req.psn, q.req.max_psn));
}

void EngineRig::check_counters(int s) {
  const DeviceCounters c = sides_[s].dev->counters();
  const uint64_t dropped = c.rx_other_host + c.rx_icrc_err + c.rx_udp_csum_err + c.rx_invalid + c.rx_other_ip +
                           c.rx_unknown_qp + c.rx_not_from_peer + c.rx_neighbor;
  ENGINE_FUZZ_CHECK(dropped <= c.rx_frames);
  ENGINE_FUZZ_CHECK(c.transport.rcvd_pkts <= c.rx_frames);
}

void EngineRig::check_step() {
  for (Side& d : sides_)
    for (QpRec& r : d.qps) check_qp(r);
  check_counters(0);
  check_counters(1);
}

void EngineRig::check_memory() {
  for (int s = 0; s < 2; ++s) {
    for (int r = 0; r < kRegions; ++r) {
      const GuardedBuffer& b = *sides_[s].buf[r];
      const long c = b.changed_canary();
      if (c >= 0) std::fprintf(stderr, "fuzz_engine: side %d region %d: canary at %ld changed\n", s, r, c);
      ENGINE_FUZZ_CHECK(c < 0);
      if (r != kReadOnly && r != kStale && r != kOtherPd) continue;
      const long k = b.changed_bytes();
      if (k >= 0) std::fprintf(stderr, "fuzz_engine: side %d region %d (never writable): byte %ld changed\n", s, r, k);
      ENGINE_FUZZ_CHECK(k < 0);
    }
  }
}

void EngineRig::finish() {
  run_for(1'000'000);
  check_step();
  // In ERR every QP's outstanding work completes (flushed); an SRQ keeps its own.
  for (Side& d : sides_) {
    for (QpRec& r : d.qps) {
      ibv_qp_attr a{};
      a.qp_state = IBV_QPS_ERR;
      ENGINE_FUZZ_CHECK(modify(r.side, r.index, a, IBV_QP_STATE) == 0);
    }
  }
  run_for(200'000'000);
  check_step();
  poll_cqs(1 << 20);
  std::array<uint32_t, 2> srq_left{};
  for (const auto& [id, p] : posted_) {
    if (p.qp >= 0)
      std::fprintf(stderr, "fuzz_engine: wr_id %llu on side %d QP %d (%s) never completed\n", (unsigned long long)id,
                   p.side, p.qp, p.recv ? "recv" : "send");
    ENGINE_FUZZ_CHECK(p.qp < 0);
    ++srq_left[size_t(p.side)];
  }
  for (int s = 0; s < 2; ++s) {
    const uint32_t held = sides_[s].srq->posted();
    ENGINE_FUZZ_CHECK(srq_reset_[size_t(s)] ? held <= srq_left[size_t(s)] : held == srq_left[size_t(s)]);
  }
  check_memory();
  ENGINE_FUZZ_CHECK(fabric_->wire().in_flight() == 0);
  // Tear down the input's QPs and SRQ; every region is free once its work
  // requests are gone.
  // A type 2 window goes with the QP it was bound through: none is left
  // bound to any region.
  for (Side& d : sides_) {
    d.qps.clear();
    d.srq.reset();
    for (int r = 0; r < kRegions; ++r) {
      ENGINE_FUZZ_CHECK(!d.mr[r] || d.mr[r]->in_use() == 0);
      ENGINE_FUZZ_CHECK(!d.mr[r] || detail::to_region(*d.mr[r]).windows == 0);
    }
  }
  posted_.clear();
  srq_reset_ = {};
  run_for(200'000'000);  // ACKs sent as QPs went away
  ENGINE_FUZZ_CHECK(fabric_->wire().in_flight() == 0);
  ibv_wc wc;
  for (Side& d : sides_) ENGINE_FUZZ_CHECK(d.cq->poll(1, &wc) == 0);
  // No mbuf is held by anyone now: the devices', the wire's, the injector's.
  rte_mempool_walk(
      [](rte_mempool* mp, void*) {
        const unsigned used = rte_mempool_in_use_count(mp);
        if (used != 0) std::fprintf(stderr, "fuzz_engine: pool %s: %u mbufs still in use\n", mp->name, used);
        ENGINE_FUZZ_CHECK(used == 0);
      },
      nullptr);
}

EngineRig::~EngineRig() {
  for (Side& d : sides_) {
    d.qps.clear();
    d.srq.reset();
    d.ah = {};
    d.mw = {};
    for (int r = 0; r < kRegions; ++r)
      if (d.mr[r]) (void)(r == kOtherPd ? d.pd2 : d.pd)->dereg_mr(d.mr[r]);
    d.cq.reset();
    d.pd2.reset();
    d.pd.reset();
  }
}

}  // namespace uroce::fuzz
