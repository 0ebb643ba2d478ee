// SPDX-License-Identifier: BSD-3-Clause
// A deterministic simulated Ethernet segment in virtual time.
//
// Ports are joined as if by an ideal switch with one directed link per
// pair of ports: a frame goes to the port that owns its destination MAC,
// broadcast/multicast and unknown unicast to every other port. Each link
// applies its LinkFaults. All randomness comes from one seeded PRNG, so the
// same seed and the same sequence of tx_burst calls (at the same virtual
// times) give the same faults and the same delivery order, bit for bit.
//
// Driving it: poll every engine in one thread; when none had work, jump
// the clock to the next event instead of spinning.
//
//   VirtualClock clock;
//   SimWire wire(clock, seed);
//   SimPort& a = wire.add_port(mac_a);   // give a and b to two engines
//   SimPort& b = wire.add_port(mac_b);
//   while (!done()) {
//     bool busy = engine_a.poll() | engine_b.poll();   // rx_burst/tx_burst
//     if (busy) continue;
//     uint64_t t = std::min({wire.next_delivery_ns(), engine_a.next_timer_ns(),
//                            engine_b.next_timer_ns()});
//     if (t == kNever) break;   // nothing will ever happen again: stuck
//     clock.advance_to(t);
//   }
//
// Frames are the senders' own mbufs; the wire copies only for broadcast,
// duplicates and corruption (a private copy, so a zero-copy payload or a
// frame the sender still holds for retransmission is never altered). Those
// copies come from the wire's own pool, created on first use; every frame
// received from it must be freed before the wire is destroyed (if one is
// still out, the pool is left allocated rather than freed under it).
#pragma once

#include <cstdint>
#include <memory>
#include <queue>
#include <vector>

#include "uroce/sim/fault_rng.h"
#include "uroce/sim/link_faults.h"
#include "uroce/sim/sim_counters.h"
#include "uroce/sim/sim_port.h"
#include "uroce/sim/sim_switch.h"
#include "uroce/sim/virtual_clock.h"

namespace uroce::sim {

class SimWire {
 public:
  // copy_pool_size: mbufs in the wire's pool for copies.
  SimWire(VirtualClock& clock, uint64_t seed, uint32_t copy_pool_size = 2047);
  ~SimWire();
  SimWire(const SimWire&) = delete;
  SimWire& operator=(const SimWire&) = delete;

  // Ports are owned by the wire and keep their address for its lifetime.
  SimPort& add_port(wire::MacAddr mac, uint16_t mtu = 1500);
  size_t port_count() const { return ports_.size(); }
  SimPort& port(size_t index) { return *ports_[index]; }

  // Faults of every link that has none of its own (now and added later).
  void set_faults(const LinkFaults& f) { default_faults_ = f; }
  void set_link_faults(const SimPort& from, const SimPort& to, const LinkFaults& f);
  void clear_link_faults(const SimPort& from, const SimPort& to);
  const LinkFaults& faults(const SimPort& from, const SimPort& to) const;

  // A cut link drops everything (counted as `cut`) until restored.
  void cut(const SimPort& a, const SimPort& b, bool down = true);  // both ways
  void cut_one_way(const SimPort& from, const SimPort& to, bool down = true);
  // Loses exactly one frame on from -> to: the one after the next `skip`
  // frames (counted as `lost`), for a test that must lose a given packet.
  void drop_one(const SimPort& from, const SimPort& to, uint32_t skip = 0);

  // Earliest delivery time of any frame in flight, or kNever.
  uint64_t next_delivery_ns() const;
  size_t in_flight() const;
  // Frees every frame in flight, e.g. before the devices that own their
  // pools go away.
  void drop_all() {
    drop_switch_frames();
    for (auto& p : ports_) p->drop_all();
  }

  const SimCounters& counters(const SimPort& from, const SimPort& to) const;
  const SimCounters& totals() const { return totals_; }

  // The switch (sim_switch.h). Off by default: each pair of ports is then
  // joined by its own link only. enable_switch() turns it on for every
  // port, now and added later, with `defaults`; ports may then differ.
  void enable_switch(const SwitchPortConfig& defaults);
  bool has_switch() const { return switch_on_; }
  // Also resets that port's counters.
  void set_switch_port(const SimPort& p, const SwitchPortConfig& c);
  const SwitchPortConfig& switch_port(const SimPort& p) const { return switch_[p.index()].cfg; }
  // Counters of p's egress queue, brought up to the current virtual time.
  const SwitchCounters& switch_counters(const SimPort& p);
  // Bytes queued toward p now.
  uint64_t queue_bytes(const SimPort& p);

  const VirtualClock& clock() const { return clock_; }
  // The pool copies come from; nullptr until the first copy.
  const rte_mempool* copy_pool() const { return copy_pool_; }

 private:
  friend class SimPort;
  struct Link {
    LinkFaults own;
    bool has_own = false;
    bool down = false;
    bool bad = false;        // Gilbert-Elliott state
    int64_t drop_in = -1;    // drop_one: frames to pass before the lost one
    uint64_t free_at_ps = 0; // when the last frame finished serialising
    SimCounters counters;
  };

  // A frame on its way to an egress queue of the switch.
  struct Arrival {
    uint64_t at_ns;
    uint64_t seq;
    rte_mbuf* m;
    uint32_t from, to;
  };
  struct ArrivesLater {
    bool operator()(const Arrival& a, const Arrival& b) const {
      return a.at_ns != b.at_ns ? a.at_ns > b.at_ns : a.seq > b.seq;
    }
  };
  struct SwitchPortState {
    SwitchPortConfig cfg;
    uint64_t up_free_at_ps = 0;    // A's cable toward the switch
    uint64_t down_free_at_ps = 0;  // the egress queue and cable toward A
    uint64_t last_ns = 0;          // occupancy integrated up to here
    SwitchCounters counters;
  };

  void transmit(uint32_t from, rte_mbuf* m);
  // Switch side (sim_switch.cpp).
  uint64_t switch_uplink(uint32_t from, uint32_t bytes, uint64_t now);
  void to_switch(uint32_t from, uint32_t to, rte_mbuf* m, uint64_t at);
  // Moves every frame that reached the switch by now through its egress
  // queue, in arrival order; rx_burst calls it first.
  void settle_switch();
  void egress(const Arrival& a);
  rte_mbuf* mark_ce(rte_mbuf* m);
  uint64_t backlog_bytes(const SwitchPortState& s, uint64_t t_ns) const;
  void integrate(SwitchPortState& s, uint64_t t_ns) const;
  void drop_switch_frames();
  void send_on_link(uint32_t from, uint32_t to, rte_mbuf* m, uint64_t now);
  void damage_and_queue(Link& l, const LinkFaults& f, uint32_t from, uint32_t to, rte_mbuf* m, uint64_t at);
  void count_delivered(uint32_t from, uint32_t to) { bump(link(from, to), &SimCounters::delivered); }
  bool route(uint32_t from, const wire::MacAddr& dst, std::vector<uint32_t>& targets) const;
  uint64_t serialise(Link& l, const LinkFaults& f, uint32_t bytes, uint64_t now);
  bool burst_drop(Link& l, const LinkFaults& f);
  rte_mbuf* copy(const rte_mbuf* m);
  rte_mbuf* corrupt(rte_mbuf* m);
  void bump(Link& l, uint64_t SimCounters::*field) {
    ++(l.counters.*field);
    ++(totals_.*field);
  }
  void drop(rte_mbuf* m, uint64_t SimCounters::*field);
  Link& link(uint32_t from, uint32_t to) { return links_[from][to]; }
  const Link& link(uint32_t from, uint32_t to) const { return links_[from][to]; }

  VirtualClock& clock_;
  FaultRng rng_;
  uint32_t copy_pool_size_;
  rte_mempool* copy_pool_ = nullptr;
  uint64_t seq_ = 0;
  LinkFaults default_faults_;
  std::vector<std::unique_ptr<SimPort>> ports_;
  std::vector<std::vector<Link>> links_;  // [from][to]
  std::vector<uint32_t> targets_;         // scratch, so routing does not allocate
  SimCounters totals_;
  bool switch_on_ = false;
  SwitchPortConfig switch_defaults_;
  std::vector<SwitchPortState> switch_;
  FaultRng red_rng_;
  std::priority_queue<Arrival, std::vector<Arrival>, ArrivesLater> arrivals_;
};

}  // namespace uroce::sim
