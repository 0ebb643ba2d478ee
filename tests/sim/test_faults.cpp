// SPDX-License-Identifier: BSD-3-Clause
// The fault model: every probability checked against the configured value
// with a tolerance of five standard deviations (the seed is fixed, so a
// run is reproducible, but the expectation comes from the model).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <map>

#include "sim_test_util.h"

using namespace uroce;
using namespace uroce::test;
using sim::LinkFaults;
using sim::SimWire;
using sim::VirtualClock;

namespace {

bool near_binomial(uint64_t observed, uint64_t n, double p) {
  const double sd = std::sqrt(double(n) * p * (1 - p));
  return std::fabs(double(observed) - double(n) * p) <= 5 * sd;
}

// Lengths of the runs of consecutive tags in [0, n) that are missing.
std::vector<uint32_t> loss_runs(const std::vector<Received>& got, uint32_t n) {
  std::vector<bool> seen(n, false);
  for (const auto& r : got) seen[tag_of(r.bytes)] = true;
  std::vector<uint32_t> runs;
  uint32_t run = 0;
  for (uint32_t i = 0; i <= n; ++i) {
    if (i < n && !seen[i]) {
      ++run;
    } else if (run > 0) {
      runs.push_back(run);
      run = 0;
    }
  }
  return runs;
}

double mean(const std::vector<uint32_t>& v) {
  double s = 0;
  for (uint32_t x : v) s += x;
  return v.empty() ? 0 : s / double(v.size());
}

struct Pair {
  TestPool pool;
  VirtualClock clock;
  SimWire wire;
  sim::SimPort& a;
  sim::SimPort& b;
  explicit Pair(const LinkFaults& f, uint64_t seed = 12345)
      : wire(clock, seed), a(wire.add_port(mac(1))), b(wire.add_port(mac(2))) {
    wire.set_faults(f);
  }
};

}  // namespace

TEST_CASE("i.i.d. loss drops the configured share, without bursts", "[faults]") {
  LinkFaults f;
  f.loss = 0.1;
  Pair p(f);
  const uint32_t n = 20'000;
  const auto got = pump(p.wire, p.clock, p.a, mac(2), p.pool.get(), n, 64, 100);
  const auto& c = p.wire.counters(p.a, p.b);
  CHECK(c.sent == n);
  CHECK(got.size() + c.lost == n);
  CHECK(near_binomial(c.lost, n, f.loss));
  CHECK(c.burst_lost == 0);
  // Independent losses: a run continues with probability 0.1, so runs
  // average 1 / 0.9 frames.
  CHECK(mean(loss_runs(got, n)) == Approx(1 / 0.9).epsilon(0.1));
}

TEST_CASE("Gilbert-Elliott loss comes in runs of 1 / p_exit_bad", "[faults]") {
  LinkFaults f;
  f.burst.p_enter_bad = 0.01;
  f.burst.p_exit_bad = 0.2;
  f.burst.loss_bad = 1.0;
  Pair p(f);
  const uint32_t n = 100'000;
  const auto got = pump(p.wire, p.clock, p.a, mac(2), p.pool.get(), n, 64, 100);
  const auto& c = p.wire.counters(p.a, p.b);
  CHECK(got.size() + c.lost == n);
  CHECK(c.burst_lost == c.lost);

  // Every frame in a bad period is lost, so loss runs are bad periods:
  // geometric with mean 1/p_exit and sd sqrt(1-p_exit)/p_exit.
  const auto runs = loss_runs(got, n);
  const double px = f.burst.p_exit_bad, pe = f.burst.p_enter_bad;
  REQUIRE(runs.size() > 100);
  const double run_sd = std::sqrt(1 - px) / px;
  CHECK(std::fabs(mean(runs) - 1 / px) <= 5 * run_sd / std::sqrt(double(runs.size())));

  // Long-run share of bad frames: pe / (pe + px). Successive frames are
  // correlated (rho = 1 - pe - px), which widens the variance of the count.
  const double pi_bad = pe / (pe + px), rho = 1 - pe - px;
  const double sd = std::sqrt(n * pi_bad * (1 - pi_bad) * (1 + rho) / (1 - rho));
  CHECK(std::fabs(double(c.lost) - n * pi_bad) <= 5 * sd);
}

TEST_CASE("reordered frames are overtaken by later ones", "[faults]") {
  LinkFaults f;
  f.reorder = 0.2;
  f.reorder_delay_ns = 10'000;
  f.latency_ns = 1'000;
  Pair p(f);
  const uint32_t n = 2'000;
  const uint64_t gap = 100;
  const auto got = pump(p.wire, p.clock, p.a, mac(2), p.pool.get(), n, 64, gap);
  REQUIRE(got.size() == n);
  const auto& c = p.wire.counters(p.a, p.b);
  CHECK(near_binomial(c.reordered, n, f.reorder));

  uint64_t delayed = 0, overtaken = 0;
  std::vector<bool> seen(n, false);
  uint32_t highest = 0;
  for (const auto& r : got) {
    const uint32_t tag = tag_of(r.bytes);
    REQUIRE(!seen[tag]);
    seen[tag] = true;
    const uint64_t delay = r.t_ns - tag * gap;
    CHECK((delay == f.latency_ns || delay == f.latency_ns + f.reorder_delay_ns));
    if (delay != f.latency_ns) ++delayed;
    if (tag < highest) ++overtaken;
    highest = std::max(highest, tag);
  }
  CHECK(delayed == c.reordered);
  // A delayed frame is overtaken by the ~100 sent during its extra delay
  // (only the very last frame has none behind it).
  CHECK(overtaken <= delayed);
  CHECK(overtaken + 1 >= delayed);
  CHECK(overtaken > 0);
}

TEST_CASE("duplicates are separate copies that arrive just after the original", "[faults]") {
  LinkFaults f;
  f.duplicate = 0.3;
  f.duplicate_delay_ns = 100;
  Pair p(f);
  const uint32_t n = 3'000;
  const auto got = pump(p.wire, p.clock, p.a, mac(2), p.pool.get(), n, 200, 1'000);
  const auto& c = p.wire.counters(p.a, p.b);
  CHECK(near_binomial(c.duplicated, n, f.duplicate));
  CHECK(got.size() == n + c.duplicated);
  CHECK(c.delivered == got.size());

  std::map<uint32_t, std::vector<const Received*>> by_tag;
  for (const auto& r : got) by_tag[tag_of(r.bytes)].push_back(&r);
  REQUIRE(by_tag.size() == n);
  uint64_t twins = 0;
  for (const auto& [tag, rs] : by_tag) {
    REQUIRE(rs.size() <= 2);
    CHECK(rs[0]->pool == p.pool.get());
    if (rs.size() == 1) continue;
    ++twins;
    CHECK(rs[1]->bytes == rs[0]->bytes);
    CHECK(rs[1]->t_ns == rs[0]->t_ns + f.duplicate_delay_ns);
    CHECK(rs[1]->pool == p.wire.copy_pool());
  }
  CHECK(twins == c.duplicated);
  CHECK(p.pool.avail() == p.pool.size());
}

TEST_CASE("corruption flips exactly one bit after the Ethernet header, in a copy", "[faults]") {
  LinkFaults f;
  f.corrupt = 1.0;
  Pair p(f);
  const uint32_t n = 600;
  std::vector<std::vector<uint8_t>> sent;
  std::vector<rte_mbuf*> originals;
  std::vector<Received> got;
  for (uint32_t i = 0; i < n; ++i) {
    run_until(p.wire, p.clock, i * 1'000, got);
    sent.push_back(make_frame(mac(2), mac(1), 60 + (i * 37) % 1441, i));
    rte_mbuf* m = mbuf_from_bytes(p.pool.get(), sent.back());
    rte_mbuf_refcnt_update(m, 1);  // as a sender keeping it for retransmission
    originals.push_back(m);
    p.a.tx_burst(&m, 1);
  }
  const auto rest = drain(p.wire, p.clock);
  got.insert(got.end(), rest.begin(), rest.end());
  REQUIRE(got.size() == n);
  CHECK(p.wire.counters(p.a, p.b).corrupted == n);

  std::vector<uint32_t> bits_hit(8, 0);
  size_t min_off = SIZE_MAX, max_off = 0;
  for (const auto& r : got) {
    // The tag may be the damaged part, so match by send order instead.
    const auto& orig = sent[&r - got.data()];
    REQUIRE(r.bytes.size() == orig.size());
    int flipped = 0;
    for (size_t i = 0; i < orig.size(); ++i) {
      const uint8_t d = r.bytes[i] ^ orig[i];
      if (d == 0) continue;
      flipped += __builtin_popcount(d);
      CHECK(i >= wire::kEthHeaderLen);
      min_off = std::min(min_off, i);
      max_off = std::max(max_off, i);
      ++bits_hit[__builtin_ctz(d)];
    }
    CHECK(flipped == 1);
  }
  CHECK(std::count(bits_hit.begin(), bits_hit.end(), 0) == 0);
  CHECK(min_off < 30);
  CHECK(max_off > 1000);
  for (uint32_t i = 0; i < n; ++i) {
    CHECK(mbuf_bytes(originals[i]) == sent[i]);  // the sender's frame is untouched
    rte_pktmbuf_free(originals[i]);
  }
  CHECK(p.pool.avail() == p.pool.size());
}
