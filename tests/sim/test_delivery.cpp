// SPDX-License-Identifier: BSD-3-Clause
// Timing and addressing of the simulated wire with no faults.
#include <catch2/catch.hpp>

#include "sim_test_util.h"

using namespace uroce;
using namespace uroce::test;
using sim::LinkFaults;
using sim::SimWire;
using sim::VirtualClock;

TEST_CASE("virtual clock only moves forward", "[delivery]") {
  VirtualClock c(50);
  CHECK(c.now_ns() == 50);
  c.advance_to(40);
  CHECK(c.now_ns() == 50);
  c.advance_to(70);
  c.advance_by(5);
  CHECK(c.now_ns() == 75);
}

TEST_CASE("a frame arrives exactly one latency after it was sent", "[delivery]") {
  TestPool pool;
  VirtualClock clock(10'000);
  SimWire wire(clock, 1);
  auto& a = wire.add_port(mac(1));
  auto& b = wire.add_port(mac(2));
  LinkFaults slow;
  slow.latency_ns = 5'000;
  wire.set_link_faults(a, b, slow);
  CHECK(wire.next_delivery_ns() == kNever);

  send(a, pool.get(), make_frame(mac(2), mac(1), 100, 7));
  send(b, pool.get(), make_frame(mac(1), mac(2), 100, 8));
  CHECK(wire.in_flight() == 2);
  // b -> a keeps the default latency (1 us); a -> b has its own.
  CHECK(wire.next_delivery_ns() == 11'000);
  std::vector<Received> got;
  run_until(wire, clock, 14'999, got);
  CHECK(b.pending() == 1);  // not due yet
  const auto rest = drain(wire, clock);
  got.insert(got.end(), rest.begin(), rest.end());
  REQUIRE(got.size() == 2);
  CHECK(got[0] == Received{11'000, a.index(), make_frame(mac(1), mac(2), 100, 8)});
  CHECK(got[1] == Received{15'000, b.index(), make_frame(mac(2), mac(1), 100, 7)});
  CHECK(wire.counters(a, b).delivered == 1);
  CHECK(wire.totals().delivered == 2);
}

TEST_CASE("frames serialise back to back at the link rate", "[delivery]") {
  TestPool pool;
  VirtualClock clock;
  SimWire wire(clock, 1);
  auto& a = wire.add_port(mac(1));
  wire.add_port(mac(2));
  LinkFaults f;
  f.bandwidth_bps = 10'000'000'000;  // 10 Gb/s: 1500 B = 12000 bits = 1.2 us
  f.latency_ns = 1'000;
  wire.set_faults(f);

  for (uint32_t i = 0; i < 3; ++i) send(a, pool.get(), make_frame(mac(2), mac(1), 1500, i));
  std::vector<Received> got;
  run_until(wire, clock, 50'000, got);
  // An idle link does not make a later frame wait.
  send(a, pool.get(), make_frame(mac(2), mac(1), 1500, 3));
  const auto rest = drain(wire, clock);
  got.insert(got.end(), rest.begin(), rest.end());
  REQUIRE(got.size() == 4);
  for (uint32_t i = 0; i < 3; ++i) {
    CHECK(tag_of(got[i].bytes) == i);
    CHECK(got[i].t_ns == 1'200 * (i + 1) + 1'000);
  }
  CHECK(got[3].t_ns == 50'000 + 1'200 + 1'000);
}

TEST_CASE("fractional serialisation times do not drift", "[delivery]") {
  TestPool pool;
  VirtualClock clock;
  SimWire wire(clock, 1);
  auto& a = wire.add_port(mac(1));
  wire.add_port(mac(2));
  LinkFaults f;
  f.bandwidth_bps = 100'000'000'000;  // 64 B = 512 bits = 5.12 ns
  f.latency_ns = 0;
  wire.set_faults(f);
  for (uint32_t i = 0; i < 100; ++i) send(a, pool.get(), make_frame(mac(2), mac(1), 64, i));
  const auto got = drain(wire, clock);
  REQUIRE(got.size() == 100);
  CHECK(got.back().t_ns == 512);  // 100 x 5.12 ns, not 100 x 5 or 100 x 6
  CHECK(got[49].t_ns == 256);
}

TEST_CASE("frames due at the same time keep their send order", "[delivery]") {
  TestPool pool;
  VirtualClock clock;
  SimWire wire(clock, 1);
  auto& a = wire.add_port(mac(1));
  auto& b = wire.add_port(mac(2));
  for (uint32_t i = 0; i < 200; ++i) send(a, pool.get(), make_frame(mac(2), mac(1), 60 + i % 7, i));
  const auto got = drain(wire, clock);
  REQUIRE(got.size() == 200);
  for (uint32_t i = 0; i < 200; ++i) {
    CHECK(got[i].port == b.index());
    CHECK(got[i].t_ns == 1'000);
    CHECK(tag_of(got[i].bytes) == i);
  }
}

TEST_CASE("unicast goes to the port with the destination MAC only", "[delivery]") {
  TestPool pool;
  VirtualClock clock;
  SimWire wire(clock, 1);
  auto& a = wire.add_port(mac(1));
  auto& b = wire.add_port(mac(2));
  auto& c = wire.add_port(mac(3));
  send(a, pool.get(), make_frame(mac(3), mac(1), 80, 1));
  send(c, pool.get(), make_frame(mac(2), mac(3), 80, 2));
  const auto got = drain(wire, clock);
  REQUIRE(got.size() == 2);
  // Both are due at once; drain() polls the ports in index order.
  CHECK((got[0].port == b.index() && tag_of(got[0].bytes) == 2));
  CHECK((got[1].port == c.index() && tag_of(got[1].bytes) == 1));
  CHECK(wire.counters(a, b).sent == 0);
  CHECK(wire.counters(a, c).delivered == 1);
  CHECK(wire.counters(c, b).delivered == 1);
}

TEST_CASE("broadcast and unknown unicast reach every other port", "[delivery]") {
  TestPool pool;
  VirtualClock clock;
  SimWire wire(clock, 1);
  auto& a = wire.add_port(mac(1));
  wire.add_port(mac(2));
  wire.add_port(mac(3));
  const auto bcast = make_frame(kBroadcast, mac(1), 60, 1);
  const auto unknown = make_frame(mac(9), mac(1), 60, 2);
  send(a, pool.get(), bcast);
  send(a, pool.get(), unknown);
  const auto got = drain(wire, clock);
  REQUIRE(got.size() == 4);
  std::vector<uint32_t> ports;
  for (const auto& r : got) {
    CHECK(r.port != a.index());
    CHECK((r.bytes == bcast || r.bytes == unknown));
    ports.push_back(r.port);
  }
  std::sort(ports.begin(), ports.end());
  CHECK(ports == std::vector<uint32_t>{1, 1, 2, 2});
  CHECK(wire.totals().sent == 4);
  CHECK(wire.totals().delivered == 4);
}

TEST_CASE("a frame with nowhere to go is dropped and counted", "[delivery]") {
  TestPool pool;
  VirtualClock clock;
  SimWire wire(clock, 1);
  auto& a = wire.add_port(mac(1));
  send(a, pool.get(), make_frame(kBroadcast, mac(1), 60, 1));  // no other port
  wire.add_port(mac(2));
  send(a, pool.get(), make_frame(mac(1), mac(1), 60, 2));       // to itself
  const std::vector<uint8_t> runt(10, 0xFF);                    // no whole Ethernet header
  send(a, pool.get(), runt);
  CHECK(drain(wire, clock).empty());
  CHECK(wire.totals().unroutable == 3);
  CHECK(pool.avail() == pool.size());
}

TEST_CASE("frames larger than the sender's MTU are dropped", "[delivery]") {
  TestPool pool(1023, 4096);
  VirtualClock clock;
  SimWire wire(clock, 1);
  auto& a = wire.add_port(mac(1));        // MTU 1500
  auto& b = wire.add_port(mac(2), 9000);  // jumbo; a's limit applies to a's frames
  auto vlan_frame = [](size_t size, uint32_t tag) {
    auto f = make_frame(mac(2), mac(1), size, tag, wire::kEtherTypeVlan);
    wire::VlanRef(f.data() + wire::kEthHeaderLen).set_inner_ethertype(wire::kEtherTypeIpv4);
    return f;
  };
  send(a, pool.get(), make_frame(mac(2), mac(1), 1514, 1));
  send(a, pool.get(), make_frame(mac(2), mac(1), 1515, 2));
  send(a, pool.get(), vlan_frame(1518, 3));
  send(a, pool.get(), vlan_frame(1519, 4));
  // 9014 bytes in a chain of four segments.
  rte_mbuf* jumbo = mbuf_from_bytes(pool.get(), make_frame(mac(1), mac(2), 9014, 5), 3000);
  REQUIRE(b.tx_burst(&jumbo, 1) == 1);
  const auto got = drain(wire, clock);
  REQUIRE(got.size() == 3);
  CHECK(tag_of(got[0].bytes) == 5);  // same time as a's frames; port a is polled first
  CHECK(got[0].bytes.size() == 9014);
  CHECK(tag_of(got[1].bytes) == 1);
  CHECK(got[2].bytes == vlan_frame(1518, 3));
  CHECK(wire.counters(a, b).oversize == 2);
  CHECK(wire.counters(a, b).sent == 4);
  CHECK(wire.totals().oversize == 2);
}

TEST_CASE("a cut link drops everything until restored", "[delivery]") {
  TestPool pool;
  VirtualClock clock;
  SimWire wire(clock, 1);
  auto& a = wire.add_port(mac(1));
  auto& b = wire.add_port(mac(2));
  wire.cut(a, b);
  send(a, pool.get(), make_frame(mac(2), mac(1), 60, 1));
  send(b, pool.get(), make_frame(mac(1), mac(2), 60, 2));
  CHECK(drain(wire, clock).empty());
  CHECK(wire.counters(a, b).cut == 1);
  CHECK(wire.counters(b, a).cut == 1);

  wire.cut(a, b, false);
  wire.cut_one_way(b, a);
  send(a, pool.get(), make_frame(mac(2), mac(1), 60, 3));
  send(b, pool.get(), make_frame(mac(1), mac(2), 60, 4));
  const auto got = drain(wire, clock);
  REQUIRE(got.size() == 1);
  CHECK(tag_of(got[0].bytes) == 3);
  CHECK(wire.totals().cut == 3);
  CHECK(pool.avail() == pool.size());
}

TEST_CASE("per-link faults override the wire's until cleared", "[delivery]") {
  VirtualClock clock;
  SimWire wire(clock, 1);
  auto& a = wire.add_port(mac(1));
  auto& b = wire.add_port(mac(2));
  LinkFaults all;
  all.latency_ns = 2'000;
  wire.set_faults(all);
  LinkFaults own;
  own.latency_ns = 7'000;
  wire.set_link_faults(a, b, own);
  CHECK(wire.faults(a, b).latency_ns == 7'000);
  CHECK(wire.faults(b, a).latency_ns == 2'000);
  wire.clear_link_faults(a, b);
  CHECK(wire.faults(a, b).latency_ns == 2'000);
  // A port added later gets the wire's faults too.
  auto& c = wire.add_port(mac(3));
  CHECK(wire.faults(c, a).latency_ns == 2'000);
}
