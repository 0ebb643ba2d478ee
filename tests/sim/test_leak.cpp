// SPDX-License-Identifier: BSD-3-Clause
// Every mbuf goes back to its pool: the senders' and the wire's own.
#include <catch2/catch.hpp>

#include "sim_test_util.h"

using namespace uroce;
using namespace uroce::test;
using sim::LinkFaults;
using sim::SimWire;
using sim::VirtualClock;

namespace {

LinkFaults everything() {
  LinkFaults f;
  f.loss = 0.1;
  f.burst = {0.02, 0.3, 0.9};
  f.duplicate = 0.3;
  f.corrupt = 0.3;
  f.reorder = 0.3;
  f.bandwidth_bps = 10'000'000'000;
  return f;
}

// 300 frames from port 0, every third one broadcast, one every 10 ns.
void send_mix(SimWire& wire, rte_mempool* pool) {
  for (uint32_t i = 0; i < 300; ++i) {
    const wire::MacAddr dst = i % 3 == 0 ? kBroadcast : mac(uint8_t(2 + i % 2));
    send(wire.port(0), pool, make_frame(dst, mac(1), 60 + i, i));
  }
}

}  // namespace

TEST_CASE("destroying the wire frees the frames still in flight", "[leak]") {
  TestPool pool;
  {
    VirtualClock clock;
    SimWire wire(clock, 5);
    for (uint8_t i = 1; i <= 3; ++i) wire.add_port(mac(i));
    wire.set_faults(everything());
    send_mix(wire, pool.get());
    std::vector<Received> got;
    run_until(wire, clock, 20'000, got);  // some delivered (and freed), some not
    CHECK(!got.empty());
    CHECK(wire.in_flight() > 0);
    CHECK(pool.avail() < pool.size());
    REQUIRE(wire.copy_pool() != nullptr);
    CHECK(rte_mempool_in_use_count(wire.copy_pool()) > 0);
  }
  CHECK(pool.avail() == pool.size());
}

TEST_CASE("the wire's copies all return once received and freed", "[leak]") {
  TestPool pool;
  VirtualClock clock;
  SimWire wire(clock, 6);
  for (uint8_t i = 1; i <= 3; ++i) wire.add_port(mac(i));
  wire.set_faults(everything());
  send_mix(wire, pool.get());
  const auto got = drain(wire, clock);
  CHECK(wire.totals().duplicated > 0);
  CHECK(wire.totals().corrupted > 0);
  CHECK(got.size() == wire.totals().delivered);
  REQUIRE(wire.copy_pool() != nullptr);
  CHECK(rte_mempool_in_use_count(wire.copy_pool()) == 0);
  CHECK(pool.avail() == pool.size());
}

TEST_CASE("an exhausted copy pool skips copies without leaking", "[leak]") {
  TestPool pool;
  VirtualClock clock;
  const uint32_t copies = 31;
  SimWire wire(clock, 7, copies);
  for (uint8_t i = 1; i <= 3; ++i) wire.add_port(mac(i));
  // Each broadcast needs one copy for the second of its two receivers.
  for (uint32_t i = 0; i < 100; ++i) send(wire.port(0), pool.get(), make_frame(kBroadcast, mac(1), 60, i));
  CHECK(wire.totals().no_buffer == 100 - copies);
  const auto got = drain(wire, clock);
  CHECK(got.size() == 100 + copies);
  CHECK(rte_mempool_in_use_count(wire.copy_pool()) == 0);
  CHECK(pool.avail() == pool.size());
}

TEST_CASE("a copy held past the wire's end can still be freed", "[leak]") {
  VirtualClock clock;
  TestPool pool;
  const rte_mempool* copy_pool = nullptr;
  rte_mbuf* held = nullptr;
  {
    SimWire wire(clock, 8, 15);
    auto& a = wire.add_port(mac(1));
    auto& b = wire.add_port(mac(2));
    LinkFaults f;
    f.corrupt = 1.0;  // so what b receives is the wire's copy
    wire.set_faults(f);
    send(a, pool.get(), make_frame(mac(2), mac(1), 100, 1));
    clock.advance_to(wire.next_delivery_ns());
    REQUIRE(b.rx_burst(&held, 1) == 1);
    copy_pool = wire.copy_pool();
    CHECK(held->pool == copy_pool);
  }
  rte_pktmbuf_free(held);
  CHECK(rte_mempool_avail_count(copy_pool) == 15);
  CHECK(pool.avail() == pool.size());
}
