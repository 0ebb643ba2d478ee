// SPDX-License-Identifier: BSD-3-Clause
#include "model_workload.h"

#include <algorithm>
#include <cmath>

#include "uroce/sim/fault_rng.h"

namespace uroce::test::model {
namespace {

using Rng = sim::FaultRng;

constexpr ibv_mtu kMtus[] = {IBV_MTU_256, IBV_MTU_512, IBV_MTU_1024, IBV_MTU_2048, IBV_MTU_4096};
constexpr uint8_t kRdAtomic[] = {1, 2, 4, 16};

// Opcode mix: every RC opcode, roughly as often as each other.
ibv_wr_opcode pick_opcode(Rng& r) {
  static constexpr struct {
    ibv_wr_opcode op;
    uint32_t weight;
  } kMix[] = {{IBV_WR_SEND, 14},          {IBV_WR_SEND_WITH_IMM, 10},       {IBV_WR_SEND_WITH_INV, 8},
              {IBV_WR_RDMA_WRITE, 14},    {IBV_WR_RDMA_WRITE_WITH_IMM, 10}, {IBV_WR_RDMA_READ, 16},
              {IBV_WR_ATOMIC_CMP_AND_SWP, 8}, {IBV_WR_ATOMIC_FETCH_AND_ADD, 8}};
  uint32_t sum = 0;
  for (const auto& m : kMix) sum += m.weight;
  uint64_t x = r.below(sum);
  for (const auto& m : kMix) {
    if (x < m.weight) return m.op;
    x -= m.weight;
  }
  return IBV_WR_SEND;
}

// 0 with some probability, else log-uniform in [1, max].
uint32_t pick_length(Rng& r, uint64_t max) {
  if (max == 0 || r.chance(0.08)) return 0;
  const double bits = std::log2(double(max) + 1.0);
  const uint64_t len = uint64_t(std::exp2(r.unit() * bits));
  return uint32_t(std::clamp<uint64_t>(len, 1, max));
}

// `len` cut into 1..max_pieces non-empty pieces (none for len 0, sometimes).
std::vector<uint32_t> cut(Rng& r, uint32_t len, uint32_t max_pieces) {
  if (len == 0) return r.chance(0.5) ? std::vector<uint32_t>{} : std::vector<uint32_t>{0};
  const uint32_t k = uint32_t(1 + r.below(std::min<uint64_t>(max_pieces, len)));
  std::vector<uint32_t> cuts;
  for (uint32_t i = 1; i < k; ++i) cuts.push_back(uint32_t(1 + r.below(len - 1)));
  std::sort(cuts.begin(), cuts.end());
  cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
  std::vector<uint32_t> pieces;
  uint32_t prev = 0;
  for (uint32_t c : cuts) {
    pieces.push_back(c - prev);
    prev = c;
  }
  pieces.push_back(len - prev);
  return pieces;
}

// Gather list: pieces anywhere in the area (a gather may read bytes twice).
Spans place_anywhere(Rng& r, const std::vector<uint32_t>& pieces, uint64_t base, uint64_t area) {
  Spans s;
  for (uint32_t len : pieces) s.push_back({base + r.below(area - len + 1), len});
  return s;
}

// Scatter list: disjoint pieces in order with random gaps, so the bytes a
// scatter writes do not depend on how overlapping SGEs would be resolved.
Spans place_disjoint(Rng& r, const std::vector<uint32_t>& pieces, uint64_t base, uint64_t area) {
  uint64_t used = 0;
  for (uint32_t len : pieces) used += len;
  uint64_t free = area - used;
  Spans s;
  uint64_t at = base;
  for (size_t i = 0; i < pieces.size(); ++i) {
    const uint64_t gap = r.below(free / (pieces.size() - i) + 1);
    free -= gap;
    at += gap;
    s.push_back({at, pieces[i]});
    at += pieces[i];
  }
  return s;
}

bool overlaps(uint64_t a, uint64_t alen, uint64_t b, uint64_t blen) { return a < b + blen && b < a + alen; }

struct Builder {
  Rng& r;
  const WorkloadConfig& cfg;
  Scenario& s;
  std::vector<uint64_t> recv_used;  // per endpoint: bytes of its receive area handed out so far

  // A receive on `ep` for a message of `len` bytes (its data lands there)
  // or for the immediate of a WRITE_WITH_IMM (its buffer stays untouched).
  void add_recv(uint32_t ep, uint32_t len, bool gets_data) {
    Endpoint& e = s.endpoints[ep];
    const uint32_t size = gets_data ? len + (r.chance(0.3) ? 0 : uint32_t(r.below(200))) : uint32_t(r.below(64));
    Recv rv;
    rv.wr_id = (1ull << 63) | (uint64_t(ep) << 40) | e.recvs.size();
    // Offsets relative to the receive area; moved into place in layout().
    rv.local = place_disjoint(r, cut(r, size, cfg.max_sge), recv_used[ep], size + r.below(64));
    for (const Span& sp : rv.local) recv_used[ep] = std::max(recv_used[ep], sp.off + sp.len);
    recv_used[ep] += 8;
    e.recvs.push_back(rv);
  }

  void add_ops(uint32_t ei, uint64_t area, uint64_t budget) {
    Endpoint& e = s.endpoints[ei];
    const PairConfig& pc = s.pairs[e.pair];
    const uint32_t n = uint32_t(cfg.min_ops + r.below(cfg.max_ops - cfg.min_ops + 1));
    std::vector<std::pair<uint64_t, uint64_t>> pending_reads;  // remote ranges of READs since the last fence
    for (uint32_t i = 0; i < n; ++i) {
      Op op;
      op.wr_id = (uint64_t(ei) << 40) | (uint64_t(i) << 4) | 0x5;
      op.opcode = pick_opcode(r);
      op.signaled = pc.sig_all || r.chance(0.75);
      op.solicited = r.chance(0.2);
      if (is_atomic(op.opcode)) {
        op.length = 8;
        op.local = {{e.layout.in + 8 * r.below(area / 8), 8}};
        op.remote_off = s.endpoints[e.peer].layout.target + 8 * r.below(area / 8);
        op.compare_add = r.chance(0.5) ? r.next() : r.below(1000);
        op.swap = r.next();
      } else {
        // One message of the largest size per endpoint, when the budget allows.
        uint64_t max = std::min<uint64_t>(area, budget);
        op.length = (i == n / 2 && area <= budget) ? uint32_t(area) : pick_length(r, max);
        budget -= op.length;
        const auto pieces = cut(r, op.length, cfg.max_sge);
        const uint64_t off_area = op.opcode == IBV_WR_RDMA_READ ? e.layout.in : e.layout.out;
        op.local = op.opcode == IBV_WR_RDMA_READ ? place_disjoint(r, pieces, off_area, area)
                                                 : place_anywhere(r, pieces, off_area, area);
        op.remote_off = s.endpoints[e.peer].layout.target + r.below(area - op.length + 1);
        op.inline_data = op.opcode != IBV_WR_RDMA_READ && op.length <= cfg.max_inline && r.chance(0.5);
      }
      if (op.opcode == IBV_WR_SEND_WITH_IMM || op.opcode == IBV_WR_RDMA_WRITE_WITH_IMM) op.imm_data = uint32_t(r.next());
      // SEND with invalidate must name a key the peer may invalidate (a
      // memory window or fast-registered region), and there are none yet:
      // any other key is a fatal invalid request (test_rx_filters.cpp). It
      // is drawn as before, so that a seed keeps its workload, and sent as
      // a plain SEND.
      if (op.opcode == IBV_WR_SEND_WITH_INV) {
        (void)r.next();  // the key it used to name
        op.opcode = IBV_WR_SEND;
      }
      // A request that changes remote memory a READ before it still reads
      // may overtake that READ's re-execution after a loss (IBA 10.8.3.3):
      // the verbs answer is IBV_SEND_FENCE.
      const bool modifies_remote = op.opcode == IBV_WR_RDMA_WRITE || op.opcode == IBV_WR_RDMA_WRITE_WITH_IMM ||
                                   is_atomic(op.opcode);
      if (modifies_remote)
        for (const auto& [off, len] : pending_reads)
          if (overlaps(off, len, op.remote_off, op.length)) op.fence = true;
      if (r.chance(0.05)) op.fence = true;
      if (op.fence) pending_reads.clear();
      if (op.opcode == IBV_WR_RDMA_READ && op.length) pending_reads.emplace_back(op.remote_off, op.length);
      if (consumes_recv(op.opcode)) add_recv(e.peer, op.length, is_send_family(op.opcode));
      e.ops.push_back(op);
    }
  }
};

PairConfig pick_pair(Rng& r, uint32_t index, uint32_t devices) {
  PairConfig p;
  // The first pairs join every two devices once; the rest repeat some.
  if (index < devices) {
    p.dev_a = index;
    p.dev_b = (index + 1) % devices;
  } else {
    p.dev_a = uint32_t(r.below(devices));
    // Mostly another device; sometimes the same one (QP to QP on one device).
    p.dev_b = r.chance(0.2) ? p.dev_a : uint32_t((p.dev_a + 1 + r.below(devices - 1)) % devices);
  }
  p.mtu = kMtus[r.below(5)];
  p.timeout = uint8_t(8 + r.below(4));  // 1..8 ms of virtual time
  p.min_rnr_timer = uint8_t(1 + r.below(4));
  p.rd_atomic = kRdAtomic[r.below(4)];
  // Start near the 24-bit wrap often, so PSN arithmetic wraps mid-run.
  p.psn_a = r.chance(0.4) ? uint32_t(0xFFFFFF - r.below(200)) : uint32_t(r.below(1 << 24));
  p.psn_b = r.chance(0.4) ? uint32_t(0xFFFFFF - r.below(200)) : uint32_t(r.below(1 << 24));
  p.sig_all = r.chance(0.2);
  return p;
}

}  // namespace

Scenario generate(uint64_t seed, const WorkloadConfig& cfg) {
  Rng r(seed * 0x9E3779B97F4A7C15ull + 0x1234);
  Scenario s;
  s.seed = seed;
  s.devices = cfg.devices;
  s.region_bytes.assign(cfg.devices, 0);
  // Largest message per pair; one pair always goes to the configured maximum.
  std::vector<uint64_t> area(cfg.pairs);
  for (uint32_t i = 0; i < cfg.pairs; ++i) {
    s.pairs.push_back(pick_pair(r, i, cfg.devices));
    const uint32_t lg = i == 0 ? cfg.max_log2_size
                               : uint32_t(cfg.min_log2_size + r.below(cfg.max_log2_size - cfg.min_log2_size + 1));
    area[i] = uint64_t(1) << lg;
  }
  // out, in and target slices first (their sizes are known), receive areas after.
  for (uint32_t i = 0; i < cfg.pairs; ++i)
    for (uint32_t side = 0; side < 2; ++side) {
      Endpoint e;
      e.pair = i;
      e.device = side ? s.pairs[i].dev_b : s.pairs[i].dev_a;
      e.peer = 2 * i + (1 - side);
      uint64_t& at = s.region_bytes[e.device];
      e.layout.out = at, e.layout.out_len = area[i], at += area[i];
      e.layout.in = at, e.layout.in_len = area[i], at += area[i];
      e.layout.target = at, e.layout.target_len = area[i], at += area[i];
      s.endpoints.push_back(e);
    }
  Builder b{r, cfg, s, std::vector<uint64_t>(s.endpoints.size(), 0)};
  // The budget is shared in proportion to the pairs' largest message, so
  // the pair with multi-MB messages can afford some.
  uint64_t area_sum = 0;
  for (uint64_t a : area) area_sum += 2 * a;
  for (uint32_t ei = 0; ei < s.endpoints.size(); ++ei) {
    const uint64_t a = area[s.endpoints[ei].pair];
    b.add_ops(ei, a, uint64_t(double(cfg.byte_budget) * double(a) / double(area_sum)));
  }
  for (uint32_t ei = 0; ei < s.endpoints.size(); ++ei) {
    Endpoint& e = s.endpoints[ei];
    uint64_t& at = s.region_bytes[e.device];
    e.layout.recv = at;
    e.layout.recv_len = b.recv_used[ei];
    at += b.recv_used[ei];
    for (Recv& rv : e.recvs)
      for (Span& sp : rv.local) sp.off += e.layout.recv;
  }
  for (uint64_t& bytes : s.region_bytes) bytes = std::max<uint64_t>(bytes, 64);
  return s;
}

}  // namespace uroce::test::model
