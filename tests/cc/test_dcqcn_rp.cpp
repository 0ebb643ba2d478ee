// SPDX-License-Identifier: BSD-3-Clause
// The DCQCN reaction point against reference.md's equations, for both
// presets: the rate after a CNP, α's decay over K, each increase stage, the
// bounds, and mlx5's refinements (monitor period, clamping, first-CNP rate).
#include <catch2/catch.hpp>

#include <cmath>

#include "cc/dcqcn_rp.h"

using namespace uroce::cc;

namespace {

constexpr uint64_t kUs = 1000;
constexpr uint64_t kLine = 40000;  // Mb/s, the paper's 40 Gb/s
constexpr uint64_t kT0 = 1'000'000;

double gain(const DcqcnParams& p) { return (1024.0 - p.dce_tcp_g) / 1024.0; }

DcqcnRp make(const DcqcnParams& p, uint64_t line = kLine) {
  DcqcnRp rp;
  rp.configure(p, line);
  return rp;
}

// Two CNPs: after the second (paper: R_T clamped) R_T sits below the
// ceiling, so that increases of R_T are visible.
void two_cnps(DcqcnRp& rp) {
  rp.on_cnp(kT0 - 10 * kUs);
  rp.on_cnp(kT0);
}

// The paper's preset with only the timer driving increases.
DcqcnParams paper_timer_only() {
  DcqcnParams p = preset_paper();
  p.rpg_byte_reset = 0;
  return p;
}

}  // namespace

TEST_CASE("starts unlimited at the ceiling", "[dcqcn-rp]") {
  for (const DcqcnParams& p : {preset_paper(), preset_mlx5()}) {
    DcqcnRp rp = make(p);
    CHECK_FALSE(rp.limited());
    CHECK(rp.rate_mbps() == kLine);
    CHECK(rp.ns_per_byte() == Approx(8000.0 / kLine));
    rp.advance(kT0 * 50);  // no time-driven event while unlimited
    CHECK(rp.rate_mbps() == kLine);
    CHECK(rp.next_event() == UINT64_MAX);
  }
  DcqcnParams p = preset_mlx5();
  p.rpg_max_rate = 25000;
  CHECK(make(p).rate_mbps() == 25000);  // rpg_max_rate caps the line rate
}

TEST_CASE("one CNP: R_T <- R_C, R_C <- R_C(1 - a/2), a <- (1-g)a + g", "[dcqcn-rp]") {
  for (DcqcnParams p : {preset_paper(), preset_mlx5()}) {
    p.initial_alpha_value = 512;
    const double a0 = 512.0 / 1023.0, g = gain(p);
    DcqcnRp rp = make(p);
    rp.on_cnp(kT0);
    CHECK(rp.limited());
    CHECK(rp.target_mbps() == Approx(kLine));
    CHECK(rp.rate_mbps() == Approx(kLine * (1 - a0 / 2)));
    CHECK(rp.alpha() == Approx((1 - g) * a0 + g));
    CHECK(rp.decreases() == 1);
    CHECK(rp.ns_per_byte() == Approx(8000.0 / rp.rate_mbps()));
  }
  // Default α 1: the first CNP halves the rate.
  for (const DcqcnParams& p : {preset_paper(), preset_mlx5()}) {
    DcqcnRp rp = make(p);
    rp.on_cnp(kT0);
    CHECK(rp.rate_mbps() == Approx(kLine / 2));
  }
}

TEST_CASE("alpha decays by (1-g) every K without a CNP", "[dcqcn-rp]") {
  for (DcqcnParams p : {preset_paper(), preset_mlx5()}) {
    p.rpg_time_reset = 1000000;  // keep the increase timer out of the way
    p.rpg_byte_reset = 0;
    const double g = gain(p);
    const uint64_t k = p.dce_tcp_rtt * kUs;
    DcqcnRp rp = make(p);
    rp.on_cnp(kT0);
    const double a1 = rp.alpha();
    rp.advance(kT0 + k - 1);
    CHECK(rp.alpha() == Approx(a1));  // not a whole period yet
    rp.advance(kT0 + k);
    CHECK(rp.alpha() == Approx(a1 * (1 - g)));
    rp.advance(kT0 + 10 * k + k / 2);
    CHECK(rp.alpha() == Approx(a1 * std::pow(1 - g, 10)));
    // The next CNP cuts with the decayed α, then raises it by g.
    const uint64_t at = kT0 + 10 * k + k / 2 + p.rate_reduce_monitor_period * kUs;
    rp.advance(at);
    const double rc = rp.rate_mbps(), a = rp.alpha();
    rp.on_cnp(at);
    CHECK(rp.rate_mbps() == Approx(rc * (1 - a / 2)));
    CHECK(rp.alpha() == Approx((1 - g) * a + g));
  }
}

TEST_CASE("fast recovery: R_C <- (R_T + R_C)/2 for the first F timer events", "[dcqcn-rp]") {
  const DcqcnParams p = paper_timer_only();
  const uint64_t t = p.rpg_time_reset * kUs;
  DcqcnRp rp = make(p);
  two_cnps(rp);
  double rc = rp.rate_mbps();
  const double rt = rp.target_mbps();
  for (uint32_t i = 1; i < p.rpg_threshold; ++i) {
    rp.advance(kT0 + i * t);
    rc = (rt + rc) / 2;
    CHECK(rp.time_stage() == i);
    CHECK(rp.target_mbps() == Approx(rt));
    CHECK(rp.rate_mbps() == Approx(rc));
  }
}

TEST_CASE("additive increase: R_T <- R_T + R_AI once a counter reaches F", "[dcqcn-rp]") {
  const DcqcnParams p = preset_paper();  // F 5, byte counter 10 MB
  const uint64_t t = p.rpg_time_reset * kUs;
  DcqcnRp rp = make(p);
  two_cnps(rp);
  double rc = rp.rate_mbps(), rt = rp.target_mbps();
  for (uint32_t i = 1; i <= p.rpg_threshold + 3; ++i) {
    rp.advance(kT0 + i * t);
    // Timer stage i, byte stage 0: max >= F adds R_AI; min (0) never passes F.
    if (i >= p.rpg_threshold) rt += p.rpg_ai_rate;
    rc = (rt + rc) / 2;
    CHECK(rp.target_mbps() == Approx(rt));
    CHECK(rp.rate_mbps() == Approx(rc));
  }
  // The byte counter drives the same machine: B bytes = one more event.
  rp.on_sent(p.rpg_byte_reset - 1);
  CHECK(rp.byte_stage() == 0);
  rp.on_sent(1);
  CHECK(rp.byte_stage() == 1);
  rt += p.rpg_ai_rate;
  rc = (rt + rc) / 2;
  CHECK(rp.rate_mbps() == Approx(rc));
}

TEST_CASE("hyper increase: R_T <- R_T + i R_HAI once both counters pass F", "[dcqcn-rp]") {
  DcqcnParams p = preset_paper();
  p.rpg_byte_reset = 1000;
  const uint64_t t = p.rpg_time_reset * kUs;
  const uint32_t f = p.rpg_threshold;
  DcqcnRp rp = make(p);
  two_cnps(rp);
  double rc = rp.rate_mbps(), rt = rp.target_mbps();
  // Byte events 1..F+2 (time stage 0): fast recovery below F, then additive.
  for (uint32_t b = 1; b <= f + 2; ++b) {
    rp.on_sent(1000);
    if (b >= f) rt += p.rpg_ai_rate;
    rc = (rt + rc) / 2;
  }
  CHECK(rp.rate_mbps() == Approx(rc));
  // Timer events: additive while the time stage is <= F, then hyper with
  // i = min(T, BC) - F.
  for (uint32_t i = 1; i <= f + 2; ++i) {
    rp.advance(kT0 + i * t);
    const uint32_t lo = std::min(i, f + 2);
    if (lo > f) rt += (lo - f) * double(p.rpg_hai_rate);
    else rt += p.rpg_ai_rate;
    rc = (rt + rc) / 2;
    CHECK(rp.target_mbps() == Approx(rt));
    CHECK(rp.rate_mbps() == Approx(rc));
  }
}

TEST_CASE("mlx5: timer-only stages follow F = rpg_threshold", "[dcqcn-rp]") {
  DcqcnParams p = preset_mlx5();  // F 1
  p.rpg_byte_reset = 0;
  const uint64_t t = p.rpg_time_reset * kUs;
  DcqcnRp rp = make(p);
  rp.on_cnp(kT0);
  double rc = rp.rate_mbps(), rt = rp.target_mbps();
  rp.advance(kT0 + t);  // T = 1 = F: additive
  rt = std::min<double>(rt + p.rpg_ai_rate, kLine);
  rc = (rt + rc) / 2;
  CHECK(rp.rate_mbps() == Approx(rc));
}

TEST_CASE("bounds: min rate, max cut, ceiling, release at line rate", "[dcqcn-rp]") {
  SECTION("never below rpg_min_rate") {
    DcqcnParams p = preset_paper();
    p.rpg_min_rate = 100;
    DcqcnRp rp = make(p);
    for (int i = 0; i < 200; ++i) rp.on_cnp(kT0 + i * kUs);
    CHECK(rp.rate_mbps() == Approx(100));
    CHECK(rp.decreases() == 200);
  }
  SECTION("rpg_min_dec_fac caps one cut") {
    DcqcnParams p = preset_mlx5();
    p.rpg_gd = 0;  // R_C (1 - α): would cut to 0 with α = 1
    p.rpg_min_dec_fac = 30;
    DcqcnRp rp = make(p);
    rp.on_cnp(kT0);
    CHECK(rp.rate_mbps() == Approx(kLine * 0.7));
  }
  SECTION("increases stop at the ceiling and hand the QP back to line rate") {
    DcqcnParams p = paper_timer_only();
    p.rpg_max_rate = 30000;
    DcqcnRp rp = make(p);
    rp.on_cnp(kT0);
    double peak = 0;
    uint64_t now = kT0;
    for (int i = 0; i < 10000 && rp.limited(); ++i) {
      now += p.rpg_time_reset * kUs;
      rp.advance(now);
      peak = std::max(peak, rp.rate_mbps());
      CHECK(rp.target_mbps() <= 30000);
    }
    CHECK_FALSE(rp.limited());
    CHECK(rp.rate_mbps() == 30000);
    CHECK(peak <= 30000);
  }
  SECTION("a long idle period catches up in bounded work") {
    DcqcnParams p = preset_mlx5();
    p.rpg_ai_rate = p.rpg_hai_rate = 0;  // R_C converges on R_T, never on line rate
    p.clamp_tgt_rate = 1;
    p.rpg_time_reset = 1;
    p.rpg_byte_reset = 0;
    DcqcnRp rp = make(p);
    rp.on_cnp(kT0);
    rp.on_cnp(kT0 + 5 * kUs);  // still limited: 5 fast-recovery steps from half
    REQUIRE(rp.limited());
    rp.advance(kT0 + 3'600'000'000'000ull);  // an hour
    CHECK(rp.limited());
    CHECK(rp.rate_mbps() <= rp.target_mbps());
    CHECK(rp.rate_mbps() > kLine / 4.0);
  }
}

TEST_CASE("mlx5: CNPs within rate_reduce_monitor_period fold into one decrease", "[dcqcn-rp]") {
  const DcqcnParams p = preset_mlx5();
  const uint64_t m = p.rate_reduce_monitor_period * kUs;
  DcqcnRp rp = make(p);
  rp.on_cnp(kT0);
  const double r1 = rp.rate_mbps();
  rp.on_cnp(kT0 + kUs);
  rp.on_cnp(kT0 + 2 * kUs);
  CHECK(rp.rate_mbps() == r1);
  CHECK(rp.decreases() == 1);
  CHECK(rp.cnps() == 3);
  CHECK(rp.next_event() == kT0 + m);
  rp.advance(kT0 + m);  // the deferred decrease, with α decayed over the period
  CHECK(rp.decreases() == 2);
  CHECK(rp.rate_mbps() < r1);
  // Without an increase in between, R_T keeps its value (clamp_tgt_rate 0).
  CHECK(rp.target_mbps() == Approx(kLine));
}

TEST_CASE("clamp_tgt_rate 1: every decrease sets R_T to R_C", "[dcqcn-rp]") {
  DcqcnParams p = preset_mlx5();
  p.clamp_tgt_rate = 1;
  p.rate_reduce_monitor_period = 0;
  DcqcnRp rp = make(p);
  rp.on_cnp(kT0);
  const double r1 = rp.rate_mbps();
  rp.on_cnp(kT0 + kUs);
  CHECK(rp.target_mbps() == Approx(r1));
}

TEST_CASE("rate_to_set_on_first_cnp", "[dcqcn-rp]") {
  DcqcnParams p = preset_mlx5();
  p.rate_to_set_on_first_cnp = 1000;
  DcqcnRp rp = make(p);
  rp.on_cnp(kT0);
  CHECK(rp.rate_mbps() == Approx(1000));
  CHECK(rp.target_mbps() == Approx(1000));
}

TEST_CASE("NP: at most one CNP per min_time_between_cnps", "[dcqcn-rp]") {
  for (const DcqcnParams& p : {preset_paper(), preset_mlx5()}) {
    DcqcnNp np;
    np.configure(p);
    const uint64_t n = p.min_time_between_cnps * kUs;
    CHECK(np.may_send(0));
    np.sent(kT0);
    CHECK_FALSE(np.may_send(kT0));
    CHECK_FALSE(np.may_send(kT0 + n - 1));
    CHECK(np.may_send(kT0 + n));
  }
}

TEST_CASE("restart: unlimited at the ceiling again, same parameters", "[dcqcn-rp]") {
  DcqcnParams p = preset_paper();
  p.rpg_max_rate = 30000;
  DcqcnRp rp = make(p);
  rp.on_cnp(kT0);
  rp.on_cnp(kT0 + kUs);
  REQUIRE(rp.limited());
  rp.restart();
  CHECK_FALSE(rp.limited());
  CHECK(rp.rate_mbps() == 30000);
  CHECK(rp.target_mbps() == 30000);
  rp.on_cnp(kT0 + 2 * kUs);  // a first CNP again: α from its initial value
  CHECK(rp.rate_mbps() == Approx(15000));
}

// Why the mlx5 defaults are unfair in the 10 Gb/s incast (docs/dcqcn.md,
// Tuning): every cut restarts the 300 us timer, so a QP cut every 40 us is
// raised only by its 32 KB byte counter, i.e. only if it sends fast enough.
// The same cuts leave a 7 Gb/s QP raised every period and a 0.5 Gb/s QP
// never; without the byte counter both only fall, by the same factor.
TEST_CASE("mlx5: under frequent cuts only the byte counter raises, so only the fast QP", "[dcqcn-rp]") {
  constexpr uint64_t kTen = 10000, kCutEvery = 40 * kUs, kRun = 2000 * kUs;
  auto run = [&](uint32_t byte_reset, uint32_t start_mbps) {
    DcqcnParams p = preset_mlx5();
    p.rpg_byte_reset = byte_reset;
    p.rate_to_set_on_first_cnp = start_mbps;
    p.initial_alpha_value = 10;  // α ~ 0.01: cuts of ~0.5 %, as in the incast's steady state
    DcqcnRp rp = make(p, kTen);
    rp.on_cnp(kT0);
    double carry = 0;  // bytes sent at R_C, 1 us at a time
    for (uint64_t t = kT0 + kUs; t <= kT0 + kRun; t += kUs) {
      rp.advance(t);
      carry += rp.rate_mbps() * 1000.0 / 8 / 1000;  // Mb/s * 1 us = bits; /8 = bytes
      const uint32_t whole = uint32_t(carry);
      carry -= whole;
      rp.on_sent(whole);
      if ((t - kT0) % kCutEvery == 0) rp.on_cnp(t);
    }
    return rp;
  };
  const DcqcnRp fast = run(32767, 7000), slow = run(32767, 500);
  const DcqcnRp fast0 = run(0, 7000), slow0 = run(0, 500);  // timer only
  INFO("fast " << fast.rate_mbps() << " Mb/s, " << fast.increases() << " increases; slow " << slow.rate_mbps()
               << " Mb/s; timer only " << fast0.rate_mbps() << " / " << slow0.rate_mbps() << " Mb/s");
  CHECK(fast.decreases() == slow.decreases());
  // The timer never fires: every cut restarts it.
  CHECK(fast0.increases() == 0);
  CHECK(slow0.increases() == 0);
  // The slow QP's byte counter never fills (32 KB take 520 us at 0.5 Gb/s),
  // the fast one's does (35 KB per period at 7 Gb/s).
  CHECK(slow.increases() == 0);
  CHECK(slow.rate_mbps() == slow0.rate_mbps());
  CHECK(fast.increases() >= 5);
  CHECK(fast.rate_mbps() > fast0.rate_mbps() * 1.02);
  // So the byte counter widens the gap; the same cuts alone keep the ratio.
  CHECK(fast0.rate_mbps() / slow0.rate_mbps() == Approx(14.0).epsilon(0.01));
  CHECK(fast.rate_mbps() / slow.rate_mbps() > 14.0 * 1.02);
}
