// SPDX-License-Identifier: BSD-3-Clause
#include "uroce/sim/sim_wire.h"

#include <rte_mbuf.h>
#include <rte_mempool.h>

#include <algorithm>

#include "frame_copy.h"

namespace uroce::sim {
namespace {

constexpr uint64_t kPsPerNs = 1000;
constexpr uint64_t kPsPerSecond = 1'000'000'000'000ull;

bool is_group(const wire::MacAddr& mac) { return (mac.bytes[0] & 1) != 0; }

// Largest frame a port may send: MTU plus the Ethernet header, plus the
// 802.1Q tag when the frame carries one. No FCS: mbufs do not hold it.
uint32_t max_frame(uint16_t mtu, bool vlan) {
  return uint32_t(mtu) + wire::kEthHeaderLen + (vlan ? wire::kVlanTagLen : 0);
}

}  // namespace

SimWire::SimWire(VirtualClock& clock, uint64_t seed, uint32_t copy_pool_size)
    : clock_(clock), rng_(seed), copy_pool_size_(copy_pool_size), red_rng_(seed ^ 0x5157C4ull) {}

SimWire::~SimWire() {
  drop_switch_frames();
  ports_.clear();  // frees every frame still in flight
  if (copy_pool_ != nullptr && rte_mempool_in_use_count(copy_pool_) == 0) rte_mempool_free(copy_pool_);
}

SimPort& SimWire::add_port(wire::MacAddr mac, uint16_t mtu) {
  const auto index = uint32_t(ports_.size());
  ports_.push_back(std::make_unique<SimPort>(*this, index, mac, mtu));
  for (auto& row : links_) row.emplace_back();
  links_.emplace_back(index + 1);
  switch_.push_back({switch_defaults_, 0, 0, clock_.now_ns(), {}});
  targets_.reserve(ports_.size());
  return *ports_.back();
}

void SimWire::set_link_faults(const SimPort& from, const SimPort& to, const LinkFaults& f) {
  Link& l = link(from.index(), to.index());
  l.own = f;
  l.has_own = true;
}

void SimWire::clear_link_faults(const SimPort& from, const SimPort& to) {
  link(from.index(), to.index()).has_own = false;
}

const LinkFaults& SimWire::faults(const SimPort& from, const SimPort& to) const {
  const Link& l = link(from.index(), to.index());
  return l.has_own ? l.own : default_faults_;
}

void SimWire::cut(const SimPort& a, const SimPort& b, bool down) {
  cut_one_way(a, b, down);
  cut_one_way(b, a, down);
}

void SimWire::cut_one_way(const SimPort& from, const SimPort& to, bool down) {
  link(from.index(), to.index()).down = down;
}

void SimWire::drop_one(const SimPort& from, const SimPort& to, uint32_t skip) {
  link(from.index(), to.index()).drop_in = skip;
}

uint64_t SimWire::next_delivery_ns() const {
  uint64_t t = kNever;
  for (const auto& p : ports_) t = std::min(t, p->next_delivery_ns());
  if (!arrivals_.empty()) t = std::min(t, arrivals_.top().at_ns);
  return t;
}

size_t SimWire::in_flight() const {
  size_t n = arrivals_.size();
  for (const auto& p : ports_) n += p->pending();
  return n;
}

const SimCounters& SimWire::counters(const SimPort& from, const SimPort& to) const {
  return link(from.index(), to.index()).counters;
}

void SimWire::drop(rte_mbuf* m, uint64_t SimCounters::*field) {
  ++(totals_.*field);
  rte_pktmbuf_free(m);
}

// Destination ports of a frame, in port order; false if it has none.
bool SimWire::route(uint32_t from, const wire::MacAddr& dst, std::vector<uint32_t>& targets) const {
  targets.clear();
  if (!is_group(dst)) {
    for (uint32_t i = 0; i < ports_.size(); ++i) {
      if (ports_[i]->mac() != dst) continue;
      if (i != from) targets.push_back(i);
      return !targets.empty();  // a frame to its own sender goes nowhere
    }
  }
  for (uint32_t i = 0; i < ports_.size(); ++i)
    if (i != from) targets.push_back(i);
  return !targets.empty();
}

void SimWire::transmit(uint32_t from, rte_mbuf* m) {
  const uint64_t now = clock_.now_ns();
  uint8_t buf[wire::kEthHeaderLen];
  const auto* eth = static_cast<const uint8_t*>(rte_pktmbuf_read(m, 0, sizeof buf, buf));
  if (eth == nullptr || !route(from, wire::EthView(eth).dst(), targets_))
    return drop(m, &SimCounters::unroutable);
  const bool vlan = wire::EthView(eth).ethertype() == wire::kEtherTypeVlan;
  if (m->pkt_len > max_frame(ports_[from]->mtu(), vlan)) {
    for (uint32_t to : targets_) {
      bump(link(from, to), &SimCounters::sent);
      bump(link(from, to), &SimCounters::oversize);
    }
    rte_pktmbuf_free(m);
    return;
  }
  // Through a switch, the sender's cable carries a broadcast once.
  const uint64_t at_fabric = switch_on_ ? switch_uplink(from, m->pkt_len, now) : now;
  // Every target but the last gets a copy, taken before any link can
  // corrupt the original.
  for (size_t i = 0; i + 1 < targets_.size(); ++i) {
    rte_mbuf* c = copy(m);
    if (c == nullptr) {
      ++totals_.no_buffer;
      continue;
    }
    send_on_link(from, targets_[i], c, at_fabric);
  }
  send_on_link(from, targets_.back(), m, at_fabric);
}

void SimWire::send_on_link(uint32_t from, uint32_t to, rte_mbuf* m, uint64_t now) {
  Link& l = link(from, to);
  const LinkFaults& f = l.has_own ? l.own : default_faults_;
  bump(l, &SimCounters::sent);
  if (l.down) {
    bump(l, &SimCounters::cut);
    rte_pktmbuf_free(m);
    return;
  }
  // A lost frame still occupied the link: it was sent, then lost.
  const uint64_t at = serialise(l, f, m->pkt_len, now) + f.latency_ns;
  const bool chosen = l.drop_in >= 0 && l.drop_in-- == 0;
  if (chosen || burst_drop(l, f) || rng_.chance(f.loss)) {
    bump(l, &SimCounters::lost);
    rte_pktmbuf_free(m);
    return;
  }
  damage_and_queue(l, f, from, to, m, at);
}

// The faults that keep the frame: duplicate, corrupt, reorder.
void SimWire::damage_and_queue(Link& l, const LinkFaults& f, uint32_t from, uint32_t to, rte_mbuf* m,
                               uint64_t at) {
  rte_mbuf* dup = nullptr;
  if (rng_.chance(f.duplicate)) {
    dup = copy(m);  // before corruption: at most one of the two is damaged
    if (dup == nullptr) ++totals_.no_buffer;
  }
  if (rng_.chance(f.corrupt) && m->pkt_len > wire::kEthHeaderLen) {
    m = corrupt(m);
    if (m != nullptr)
      bump(l, &SimCounters::corrupted);
    else
      ++totals_.no_buffer;
  }
  const uint64_t dup_at = at + f.duplicate_delay_ns;
  if (rng_.chance(f.reorder) && m != nullptr) {
    at += f.reorder_delay_ns;
    bump(l, &SimCounters::reordered);
  }
  if (dup != nullptr) bump(l, &SimCounters::duplicated);
  if (switch_on_) {
    if (m != nullptr) to_switch(from, to, m, at);
    if (dup != nullptr) to_switch(from, to, dup, dup_at);
    return;
  }
  SimPort& dst = *ports_[to];
  if (m != nullptr) dst.enqueue({at, seq_++, m, from});
  if (dup != nullptr) dst.enqueue({dup_at, seq_++, dup, from});
}

// Departure (last bit on the wire) in ns. Kept in picoseconds so rates
// that do not divide evenly into nanoseconds do not drift.
uint64_t SimWire::serialise(Link& l, const LinkFaults& f, uint32_t bytes, uint64_t now) {
  if (f.bandwidth_bps == 0) return now;
  const uint64_t start_ps = std::max(now * kPsPerNs, l.free_at_ps);
  l.free_at_ps = start_ps + uint64_t(bytes) * 8 * kPsPerSecond / f.bandwidth_bps;
  return (l.free_at_ps + kPsPerNs - 1) / kPsPerNs;  // never before the last bit
}

// Steps the Gilbert-Elliott chain once for this frame.
bool SimWire::burst_drop(Link& l, const LinkFaults& f) {
  const BurstLoss& b = f.burst;
  if (!l.bad && b.p_enter_bad <= 0.0) return false;
  if (l.bad ? rng_.chance(b.p_exit_bad) : rng_.chance(b.p_enter_bad)) l.bad = !l.bad;
  if (!l.bad || !rng_.chance(b.loss_bad)) return false;
  bump(l, &SimCounters::burst_lost);
  return true;
}

// nullptr when the pool is empty, or could not be created (no_buffer
// then tells the test why frames went missing).
rte_mbuf* SimWire::copy(const rte_mbuf* m) {
  if (copy_pool_ == nullptr) copy_pool_ = detail::create_copy_pool(copy_pool_size_);
  if (copy_pool_ == nullptr) return nullptr;
  return rte_pktmbuf_copy(m, copy_pool_, 0, UINT32_MAX);
}

// Flips one bit after the Ethernet header of a private copy; frees m.
// nullptr when no copy could be made (the frame is then lost).
rte_mbuf* SimWire::corrupt(rte_mbuf* m) {
  rte_mbuf* c = copy(m);
  rte_pktmbuf_free(m);
  if (c == nullptr) return nullptr;
  const auto off = uint32_t(wire::kEthHeaderLen + rng_.below(c->pkt_len - wire::kEthHeaderLen));
  detail::flip_bit(c, off, unsigned(rng_.below(8)));
  return c;
}

}  // namespace uroce::sim
