// SPDX-License-Identifier: BSD-3-Clause
// The switch of the simulated wire: serialisation at the port rates, tail
// drop, RED/ECN marking and its counters.
#include <catch2/catch.hpp>

#include <cmath>

#include "switch_test_util.h"

using namespace uroce;
using namespace uroce::test;
using sim::SimWire;
using sim::SwitchPortConfig;
using sim::VirtualClock;

namespace {

constexpr uint8_t kEct0 = 2;

// Three ports: two senders and a receiver, 0 ns pair links, so only the
// switch shapes the timing.
struct Star {
  explicit Star(const SwitchPortConfig& all, uint64_t seed = 1) : wire(clock, seed) {
    sim::LinkFaults none;
    none.latency_ns = 0;
    wire.set_faults(none);
    a = &wire.add_port(mac(1));
    b = &wire.add_port(mac(2));
    c = &wire.add_port(mac(3));
    wire.enable_switch(all);
  }
  VirtualClock clock;
  SimWire wire;
  sim::SimPort *a, *b, *c;
};

}  // namespace

TEST_CASE("RED probability follows the DCQCN CP curve", "[switch]") {
  sim::RedEcn red{5'000, 200'000, 0.01, true};
  CHECK(red.probability(0) == 0.0);
  CHECK(red.probability(5'000) == 0.0);
  CHECK(red.probability(102'500) == Approx(0.005));
  CHECK(red.probability(200'000) == Approx(0.01));
  CHECK(red.probability(200'001) == 1.0);
  CHECK(sim::RedEcn{}.probability(1'000'000) == 0.0);  // off
}

TEST_CASE("the egress port serialises two senders at its rate", "[switch]") {
  TestPool pool;
  SwitchPortConfig cfg;
  cfg.rate_bps = 10'000'000'000;  // 1500 B: 1.2 us
  cfg.latency_ns = 500;
  Star s(cfg);
  for (uint32_t i = 0; i < 5; ++i) {
    send(*s.a, pool.get(), make_frame(mac(3), mac(1), 1500, i));
    send(*s.b, pool.get(), make_frame(mac(3), mac(2), 1500, 100 + i));
  }
  const auto got = drain(s.wire, s.clock);
  REQUIRE(got.size() == 10);
  // Both reach the switch at 1.2 + 0.5 us, then leave one per 1.2 us: the
  // fan-in takes twice as long as one sender alone.
  for (size_t i = 0; i < got.size(); ++i) {
    CHECK(got[i].port == s.c->index());
    CHECK(got[i].t_ns == 1'700 + 1'200 * (i + 1) + 500);
  }
  // Arrivals at equal times keep their send order: a, b, a, b ...
  CHECK(tag_of(got[0].bytes) == 0);
  CHECK(tag_of(got[1].bytes) == 100);
  // Two frames arrive per 1.2 us and one leaves: the queue grows by one
  // frame per round, to 4 frames left plus the last round's 2.
  CHECK(s.wire.switch_counters(*s.c).max_depth_bytes == 6 * 1500);
  CHECK(s.wire.switch_counters(*s.c).enqueued == 10);
  CHECK(s.wire.switch_counters(*s.a).enqueued == 0);
}

TEST_CASE("a slow sender's cable paces its frames", "[switch]") {
  TestPool pool;
  SwitchPortConfig fast;
  fast.rate_bps = 10'000'000'000;
  Star s(fast);
  SwitchPortConfig slow = fast;
  slow.rate_bps = 1'000'000'000;  // 1000 B: 8 us
  s.wire.set_switch_port(*s.a, slow);
  for (uint32_t i = 0; i < 3; ++i) send(*s.a, pool.get(), make_frame(mac(3), mac(1), 1000, i));
  send(*s.a, pool.get(), make_frame(kBroadcast, mac(1), 1000, 9));  // on a's cable once
  const auto got = drain(s.wire, s.clock);
  REQUIRE(got.size() == 5);
  for (uint32_t i = 0; i < 3; ++i) CHECK(got[i].t_ns == 8'000 * (i + 1) + 800);
  CHECK(got[3].t_ns == 32'000 + 800);
  CHECK(got[4].t_ns == 32'000 + 800);
}

TEST_CASE("a full egress buffer drops at the tail", "[switch]") {
  TestPool pool;
  SwitchPortConfig cfg;
  cfg.rate_bps = 10'000'000'000;
  Star s(cfg);
  SwitchPortConfig rx = cfg;
  rx.buffer_bytes = 15'000;
  s.wire.set_switch_port(*s.c, rx);
  SwitchPortConfig infinite;  // senders' cables: everything arrives at once
  s.wire.set_switch_port(*s.a, infinite);
  s.wire.set_switch_port(*s.b, infinite);
  for (uint32_t i = 0; i < 15; ++i) {
    send(*s.a, pool.get(), make_frame(mac(3), mac(1), 1500, i));
    send(*s.b, pool.get(), make_frame(mac(3), mac(2), 1500, 100 + i));
  }
  const auto got = drain(s.wire, s.clock);
  // 10 x 1500 B fill the buffer exactly; the 11th would not fit.
  REQUIRE(got.size() == 10);
  const auto& c = s.wire.switch_counters(*s.c);
  CHECK(c.tail_dropped == 20);
  CHECK(c.red_dropped == 0);
  CHECK(c.max_depth_bytes == 15'000);
  CHECK(s.wire.counters(*s.a, *s.c).queue_dropped == 10);
  CHECK(s.wire.counters(*s.b, *s.c).queue_dropped == 10);
  CHECK(s.wire.counters(*s.a, *s.c).delivered == 5);
  CHECK(pool.avail() == pool.size());
}

TEST_CASE("RED marks ECT frames with the configured probability", "[switch]") {
  TestPool pool;
  SwitchPortConfig cfg;  // infinite senders' cables: a burst arrives at once
  Star s(cfg, 7);
  SwitchPortConfig rx;
  rx.rate_bps = 1'000'000;  // so slow that a burst does not drain while it arrives
  rx.red = {5'000, 15'000, 0.2, true};
  s.wire.set_switch_port(*s.c, rx);
  constexpr int kBursts = 400, kFrames = 20;
  std::vector<int> marks(kFrames, 0);
  for (int burst = 0; burst < kBursts; ++burst) {
    // Frame i finds i * 1000 bytes queued.
    for (uint32_t i = 0; i < kFrames; ++i) send(*s.a, pool.get(), ip_frame(mac(3), mac(1), 1000, i, kEct0));
    for (const auto& r : drain(s.wire, s.clock)) {
      const uint8_t ecn = ecn_of(r.bytes);
      REQUIRE((ecn == 3 || ecn == kEct0));
      if (ecn == 3) ++marks[ip_tag(r.bytes)];
      // Marking rewrote the TOS byte and kept the header checksum right.
      CHECK(wire::ipv4_header_checksum(r.bytes.data() + wire::kEthHeaderLen, wire::kIpv4MinHeaderLen) == 0);
      auto want = ip_frame(mac(3), mac(1), 1000, ip_tag(r.bytes), ecn);
      CHECK(r.bytes == want);
    }
  }
  int total = 0;
  for (int i = 0; i < kFrames; ++i) {
    const double p = rx.red.probability(uint64_t(i) * 1000);
    const double n = kBursts * p, sd = std::sqrt(kBursts * p * (1 - p));
    INFO("frame " << i << " p " << p);
    CHECK(std::abs(marks[i] - n) <= 4 * sd + 0.5);
    total += marks[i];
  }
  CHECK(marks[5] == 0);               // q == kmin: never
  CHECK(marks[16] == kBursts);        // q > kmax: always
  const auto& c = s.wire.switch_counters(*s.c);
  CHECK(c.marked == uint64_t(total));
  CHECK(c.seen_below_kmin == 6 * kBursts);
  CHECK(c.seen_between == 10 * kBursts);
  CHECK(c.seen_above_kmax == 4 * kBursts);
  CHECK(c.dropped() == 0);
  CHECK(s.wire.counters(*s.a, *s.c).ecn_marked == uint64_t(total));
  CHECK(pool.avail() == pool.size());
}

TEST_CASE("RED drops Not-ECT frames unless told to pass them", "[switch]") {
  TestPool pool;
  for (bool drop : {true, false}) {
    Star s(SwitchPortConfig{});
    SwitchPortConfig rx;
    rx.rate_bps = 1'000'000;
    rx.red = {5'000, 15'000, 0.2, drop};
    s.wire.set_switch_port(*s.c, rx);
    for (uint32_t i = 0; i < 20; ++i) send(*s.a, pool.get(), ip_frame(mac(3), mac(1), 1000, i, 0));
    const auto got = drain(s.wire, s.clock);
    const auto& c = s.wire.switch_counters(*s.c);
    CHECK(c.marked == 0);
    for (const auto& r : got) CHECK(ecn_of(r.bytes) == 0);
    if (drop) {
      CHECK(c.red_dropped >= 4);  // all four above kmax, and some between
      CHECK(got.size() == 20 - c.red_dropped);
      // A frame that found more than kmax queued was always dropped.
      CHECK(c.max_depth_bytes <= 16'000);
    } else {
      CHECK(c.red_dropped == 0);
      CHECK(got.size() == 20);
      CHECK(c.max_depth_bytes == 20'000);
    }
  }
  CHECK(pool.avail() == pool.size());
}

TEST_CASE("RED marks IPv6 in the traffic class and keeps CE frames", "[switch]") {
  TestPool pool;
  Star s(SwitchPortConfig{});
  SwitchPortConfig rx;
  rx.rate_bps = 1'000'000;
  rx.red = {0, 1, 0.0, true};  // every frame after the first is above kmax
  s.wire.set_switch_port(*s.c, rx);
  send(*s.a, pool.get(), ip_frame(mac(3), mac(1), 200, 0, kEct0, true));
  send(*s.a, pool.get(), ip_frame(mac(3), mac(1), 200, 1, 1, true));  // ECT(1)
  send(*s.a, pool.get(), ip_frame(mac(3), mac(1), 200, 2, 3, true));  // CE already
  const auto got = drain(s.wire, s.clock);
  REQUIRE(got.size() == 3);
  CHECK(got[0].bytes == ip_frame(mac(3), mac(1), 200, 0, kEct0, true));
  CHECK(got[1].bytes == ip_frame(mac(3), mac(1), 200, 1, 3, true));  // flow label, DSCP intact
  CHECK(got[2].bytes == ip_frame(mac(3), mac(1), 200, 2, 3, true));
  CHECK(s.wire.switch_counters(*s.c).marked == 2);
}

TEST_CASE("a frame someone else still holds is marked in a copy", "[switch]") {
  TestPool pool;
  Star s(SwitchPortConfig{});
  SwitchPortConfig rx;
  rx.rate_bps = 1'000'000;
  rx.red = {0, 1, 0.0, true};
  s.wire.set_switch_port(*s.c, rx);
  send(*s.a, pool.get(), ip_frame(mac(3), mac(1), 200, 0, kEct0));
  const auto original = ip_frame(mac(3), mac(1), 200, 1, kEct0);
  rte_mbuf* held = mbuf_from_bytes(pool.get(), original);
  rte_mbuf_refcnt_update(held, 1);  // as a sender keeping it for a retry
  rte_mbuf* m = held;
  REQUIRE(s.a->tx_burst(&m, 1) == 1);
  const auto got = drain(s.wire, s.clock);
  REQUIRE(got.size() == 2);
  CHECK(ecn_of(got[1].bytes) == 3);
  CHECK(got[1].pool == s.wire.copy_pool());
  CHECK(mbuf_bytes(held) == original);  // the sender's frame is untouched
  rte_pktmbuf_free(held);
  CHECK(pool.avail() == pool.size());
}

TEST_CASE("queue counters integrate the depth over virtual time", "[switch]") {
  TestPool pool;
  Star s(SwitchPortConfig{});
  SwitchPortConfig rx;
  rx.rate_bps = 1'000'000'000;  // 1000 B in 8 us
  rx.red = {4'000, 8'000, 0.0, true};
  s.wire.set_switch_port(*s.c, rx);
  for (uint32_t i = 0; i < 10; ++i) send(*s.a, pool.get(), ip_frame(mac(3), mac(1), 1000, i, kEct0));
  // The burst reaches the switch at t = 0 (infinite cable, 0 ns links).
  std::vector<Received> got;
  run_until(s.wire, s.clock, 40'000, got);
  CHECK(s.wire.queue_bytes(*s.c) == 5'000);
  run_until(s.wire, s.clock, 100'000, got);
  CHECK(got.size() == 10);
  CHECK(s.wire.queue_bytes(*s.c) == 0);
  const auto& c = s.wire.switch_counters(*s.c);
  CHECK(c.time_ns == 100'000);
  // 10 kB draining linearly over 80 us, then empty.
  CHECK(c.depth_byte_ns == Approx(10'000.0 * 80'000 / 2));
  CHECK(c.mean_depth_bytes() == Approx(4'000.0));
  CHECK(c.time_above_kmax_ns == Approx(16'000));        // 10 kB -> 8 kB
  CHECK(c.time_below_kmin_ns == Approx(32'000 + 20'000));  // 4 kB -> 0, then idle
  CHECK(c.seen_below_kmin == 5);
  CHECK(c.seen_between == 4);
  CHECK(c.seen_above_kmax == 1);
  CHECK(c.marked == 1);  // the one above kmax
  CHECK(c.max_depth_bytes == 10'000);
}

TEST_CASE("the switch's marks are the same for the same seed", "[switch]") {
  auto run = [](uint64_t seed) {
    TestPool pool;
    Star s(SwitchPortConfig{}, seed);
    SwitchPortConfig rx;
    rx.rate_bps = 1'000'000;
    rx.red = {0, 100'000, 0.5, true};
    s.wire.set_switch_port(*s.c, rx);
    std::vector<uint8_t> ecns;
    for (uint32_t i = 0; i < 60; ++i) send(*s.a, pool.get(), ip_frame(mac(3), mac(1), 1000, i, kEct0));
    for (const auto& r : drain(s.wire, s.clock)) ecns.push_back(ecn_of(r.bytes));
    return ecns;
  };
  CHECK(run(3) == run(3));
  CHECK(run(3) != run(4));
}

TEST_CASE("frames inside the switch are freed with the wire", "[switch]") {
  TestPool pool;
  {
    SwitchPortConfig cfg;
    cfg.rate_bps = 1'000'000;
    Star s(cfg);
    for (uint32_t i = 0; i < 8; ++i) send(*s.a, pool.get(), make_frame(mac(3), mac(1), 1000, i));
    CHECK(s.wire.in_flight() == 8);
    CHECK(s.wire.next_delivery_ns() == 8'000'000);  // the first reaches the switch
  }
  CHECK(pool.avail() == pool.size());
}
