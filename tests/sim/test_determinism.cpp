// SPDX-License-Identifier: BSD-3-Clause
// Same seed and same input: the same frames at the same times, bit for bit.
#include <catch2/catch.hpp>

#include "sim_test_util.h"

using namespace uroce;
using namespace uroce::test;

namespace {

struct Outcome {
  std::vector<Received> got;
  sim::SimCounters totals;
};

// Every fault on, four ports, 3000 frames of varied size, destination and
// timing. The input comes from its own fixed generator, not the wire's seed.
Outcome scenario(uint64_t seed) {
  TestPool pool;
  sim::VirtualClock clock;
  sim::SimWire wire(clock, seed);
  for (uint8_t i = 1; i <= 4; ++i) wire.add_port(mac(i));
  sim::LinkFaults f;
  f.latency_ns = 1'500;
  f.bandwidth_bps = 25'000'000'000;
  f.loss = 0.03;
  f.burst = {0.005, 0.3, 0.8};
  f.reorder = 0.05;
  f.reorder_delay_ns = 3'000;
  f.duplicate = 0.03;
  f.corrupt = 0.03;
  wire.set_faults(f);
  sim::LinkFaults slow = f;
  slow.bandwidth_bps = 1'000'000'000;
  wire.set_link_faults(wire.port(0), wire.port(1), slow);

  Outcome out;
  uint64_t x = 0x1234567;
  uint64_t t = 0;
  for (uint32_t i = 0; i < 3'000; ++i) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    const uint32_t from = uint32_t(x >> 60) % 4;
    const uint32_t to = uint32_t(x >> 50) % 5;  // 4 = broadcast
    const wire::MacAddr dst = to == 4 ? kBroadcast : mac(uint8_t(to + 1));
    t += (x >> 20) % 600;
    run_until(wire, clock, t, out.got);
    send(wire.port(from), pool.get(), make_frame(dst, mac(uint8_t(from + 1)), 60 + (x >> 32) % 1400, i));
  }
  const auto rest = drain(wire, clock);
  out.got.insert(out.got.end(), rest.begin(), rest.end());
  out.totals = wire.totals();
  return out;
}

}  // namespace

TEST_CASE("the same seed gives the same frames at the same times", "[determinism]") {
  const Outcome a = scenario(42);
  const Outcome b = scenario(42);
  // The scenario exercises every fault, or the comparison proves little.
  CHECK(a.totals.lost > 0);
  CHECK(a.totals.burst_lost > 0);
  CHECK(a.totals.duplicated > 0);
  CHECK(a.totals.corrupted > 0);
  CHECK(a.totals.reordered > 0);
  CHECK(a.totals.delivered == a.got.size());
  CHECK(a.totals == b.totals);
  REQUIRE(a.got.size() == b.got.size());
  for (size_t i = 0; i < a.got.size(); ++i) {
    INFO("frame " << i);
    REQUIRE(a.got[i] == b.got[i]);
  }
}

TEST_CASE("a different seed gives different faults", "[determinism]") {
  const Outcome a = scenario(42);
  const Outcome b = scenario(43);
  CHECK(!(a.totals == b.totals));
  CHECK(a.got != b.got);
}
