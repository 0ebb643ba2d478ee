// SPDX-License-Identifier: BSD-3-Clause
// The switch of the simulated wire (uroce/sim/sim_switch.h): the cables
// to the switch, the egress queues, RED/ECN and tail drop.
#include <rte_mbuf.h>

#include <algorithm>

#include "ecn_mark.h"
#include "uroce/sim/sim_wire.h"

namespace uroce::sim {
namespace {

constexpr uint64_t kPsPerNs = 1000;
constexpr uint64_t kPsPerSecond = 1'000'000'000'000ull;
// Enough for every frame in flight of a 16:1 incast without growing.
constexpr size_t kArrivalsReserve = 8192;
// ps x bit/s overflows 64 bits beyond a few ms of backlog at 100 Gb/s.
__extension__ using u128 = unsigned __int128;

uint64_t ps_to_send(uint32_t bytes, uint64_t rate_bps) { return uint64_t(bytes) * 8 * kPsPerSecond / rate_bps; }
uint64_t ceil_ns(uint64_t ps) { return (ps + kPsPerNs - 1) / kPsPerNs; }

}  // namespace

void SimWire::enable_switch(const SwitchPortConfig& defaults) {
  if (!switch_on_) {
    std::vector<Arrival> storage;
    storage.reserve(kArrivalsReserve);
    arrivals_ = decltype(arrivals_)(ArrivesLater{}, std::move(storage));
  }
  switch_on_ = true;
  switch_defaults_ = defaults;
  for (auto& p : ports_) set_switch_port(*p, defaults);
}

void SimWire::set_switch_port(const SimPort& p, const SwitchPortConfig& c) {
  settle_switch();
  SwitchPortState& s = switch_[p.index()];
  s.cfg = c;
  s.counters = {};
  s.last_ns = clock_.now_ns();
}

const SwitchCounters& SimWire::switch_counters(const SimPort& p) {
  settle_switch();
  SwitchPortState& s = switch_[p.index()];
  integrate(s, std::max(clock_.now_ns(), s.last_ns));
  return s.counters;
}

uint64_t SimWire::queue_bytes(const SimPort& p) {
  settle_switch();
  return backlog_bytes(switch_[p.index()], clock_.now_ns());
}

// When the frame's last bit reaches the switch.
uint64_t SimWire::switch_uplink(uint32_t from, uint32_t bytes, uint64_t now) {
  SwitchPortState& s = switch_[from];
  if (s.cfg.rate_bps == 0) return now + s.cfg.latency_ns;
  const uint64_t start_ps = std::max(now * kPsPerNs, s.up_free_at_ps);
  s.up_free_at_ps = start_ps + ps_to_send(bytes, s.cfg.rate_bps);
  return ceil_ns(s.up_free_at_ps) + s.cfg.latency_ns;
}

void SimWire::to_switch(uint32_t from, uint32_t to, rte_mbuf* m, uint64_t at) {
  arrivals_.push({at, seq_++, m, from, to});
}

void SimWire::settle_switch() {
  const uint64_t now = clock_.now_ns();
  while (!arrivals_.empty() && arrivals_.top().at_ns <= now) {
    const Arrival a = arrivals_.top();
    arrivals_.pop();
    egress(a);
  }
}

void SimWire::drop_switch_frames() {
  while (!arrivals_.empty()) {
    rte_pktmbuf_free(arrivals_.top().m);
    arrivals_.pop();
  }
}

// Bytes not yet serialised at time t: the queue drains at the port rate
// from the moment it was last known.
uint64_t SimWire::backlog_bytes(const SwitchPortState& s, uint64_t t_ns) const {
  const uint64_t t_ps = t_ns * kPsPerNs;
  if (s.cfg.rate_bps == 0 || s.down_free_at_ps <= t_ps) return 0;
  const u128 bits = u128(s.down_free_at_ps - t_ps) * s.cfg.rate_bps / kPsPerSecond;
  return uint64_t((bits + 7) / 8);
}

// Adds [last_ns, t] to the occupancy integrals. Between arrivals the
// queue falls linearly at the port rate, so each is exact.
void SimWire::integrate(SwitchPortState& s, uint64_t t_ns) const {
  if (t_ns <= s.last_ns) return;
  SwitchCounters& c = s.counters;
  const double dt = double(t_ns - s.last_ns);
  const double b0 = double(backlog_bytes(s, s.last_ns));
  c.time_ns += t_ns - s.last_ns;
  s.last_ns = t_ns;
  if (b0 <= 0.0) {
    c.time_below_kmin_ns += dt;
    return;
  }
  const double r = double(s.cfg.rate_bps) / 8e9;  // bytes per ns
  const double drain = b0 / r;
  c.depth_byte_ns += drain >= dt ? b0 * dt - r * dt * dt / 2 : b0 * drain / 2;
  auto time_above = [&](double x) { return std::clamp((b0 - x) / r, 0.0, dt); };
  c.time_below_kmin_ns += dt - time_above(double(s.cfg.red.kmin_bytes));
  if (s.cfg.red.enabled()) c.time_above_kmax_ns += time_above(double(s.cfg.red.kmax_bytes));
}

// Gives a frame CE, in place when nobody else holds it, else in a private
// copy, like corruption. nullptr when no copy could be made.
rte_mbuf* SimWire::mark_ce(rte_mbuf* m) {
  const detail::EcnField f = detail::read_ecn(m);
  if (f.ecn == detail::kEcnCe) return m;
  if (rte_mbuf_refcnt_read(m) != 1 || !RTE_MBUF_DIRECT(m)) {
    rte_mbuf* c = copy(m);
    rte_pktmbuf_free(m);
    if (c == nullptr) return nullptr;
    m = c;
  }
  detail::set_ce(m, f);
  return m;
}

void SimWire::egress(const Arrival& a) {
  SwitchPortState& s = switch_[a.to];
  SwitchCounters& c = s.counters;
  Link& l = link(a.from, a.to);
  rte_mbuf* m = a.m;
  const uint64_t t = std::max(a.at_ns, s.last_ns);
  integrate(s, t);
  const uint64_t q = backlog_bytes(s, t);
  const uint32_t len = m->pkt_len;
  if (s.cfg.buffer_bytes != 0 && q + len > s.cfg.buffer_bytes) {
    ++c.tail_dropped;
    bump(l, &SimCounters::queue_dropped);
    rte_pktmbuf_free(m);
    return;
  }
  const RedEcn& red = s.cfg.red;
  if (red.enabled()) {
    if (q <= red.kmin_bytes)
      ++c.seen_below_kmin;
    else if (q <= red.kmax_bytes)
      ++c.seen_between;
    else
      ++c.seen_above_kmax;
  }
  if (red_rng_.chance(red.probability(q))) {
    const detail::EcnField f = detail::read_ecn(m);
    if (f.ip_off != 0 && f.ecn != detail::kEcnNotEct) {
      m = mark_ce(m);
      if (m == nullptr) {
        ++totals_.no_buffer;
        return;
      }
      ++c.marked;
      bump(l, &SimCounters::ecn_marked);
    } else if (red.drop_not_ect) {
      ++c.red_dropped;
      bump(l, &SimCounters::queue_dropped);
      rte_pktmbuf_free(m);
      return;
    }
  }
  uint64_t depart_ns = t;
  if (s.cfg.rate_bps != 0) {
    s.down_free_at_ps = std::max(t * kPsPerNs, s.down_free_at_ps) + ps_to_send(len, s.cfg.rate_bps);
    depart_ns = ceil_ns(s.down_free_at_ps);
  }
  ++c.enqueued;
  c.enqueued_bytes += len;
  c.max_depth_bytes = std::max(c.max_depth_bytes, q + len);
  ports_[a.to]->enqueue({depart_ns + s.cfg.latency_ns, seq_++, m, a.from});
}

}  // namespace uroce::sim
