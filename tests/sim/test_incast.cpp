// N:1 incast through the simulated switch, DCQCN (the paper's preset) vs
// no congestion control, in virtual time (incast.h). The numbers each run
// measured are printed; with UROCE_INCAST_TSV_DIR set, the time series go
// to DIR/incast-N-{dcqcn,none}.tsv for scripts/plot_incast.py.
#include <catch2/catch.hpp>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "incast.h"

using namespace uroce;
using namespace uroce::test;

namespace {

constexpr uint64_t kMs = 1'000'000;
constexpr uint64_t kLinkBps = 10'000'000'000;
// The paper's marking (Kmin 5 KB, Pmax 1 %) with its Kmax of 200 KB at
// 40 Gb/s scaled to 10 Gb/s. The buffer holds a DCQCN queue plus the one
// window (128 packets, 138 KB) a joining flow sends before its first CNP,
// but not two windows: without congestion control even two flows overflow it.
constexpr sim::RedEcn kRed{5'000, 50'000, 0.01, true};
constexpr uint64_t kBuffer = 250'000;

// Flows join 0.5 ms apart; the fair share is judged from 10 ms after the
// last join for 20 ms; then all but flow 0 stop, which has 20 ms to
// regain line rate (the paper's additive increase: 40 Mb/s per 55 us).
struct Timeline {
  uint64_t fair_from, stop, solo_from, end;
};

Timeline timeline(int n) {
  const uint64_t last_join = uint64_t(n - 1) * kMs / 2;
  Timeline t;
  t.fair_from = last_join + 10 * kMs;
  t.stop = t.fair_from + 20 * kMs;
  t.solo_from = t.stop + 15 * kMs;
  t.end = t.stop + 20 * kMs;
  return t;
}

IncastResult run(int n, bool dcqcn) {
  IncastConfig c;
  c.senders = n;
  c.link_bps = kLinkBps;
  c.buffer_bytes = kBuffer;
  c.red = kRed;
  if (dcqcn) {
    std::string err;
    REQUIRE(cc::parse_cc("dcqcn-paper", c.cc, err));
  }
  c.start_gap_ns = kMs / 2;
  const Timeline t = timeline(n);
  c.stop_others_ns = t.stop;
  c.run_ns = t.end;
  c.sample_ns = kMs / 4;
  c.seed = 100 + uint64_t(n);
  IncastResult r = run_incast(c);
  if (const char* dir = std::getenv("UROCE_INCAST_TSV_DIR")) {
    const std::string path =
        std::string(dir) + "/incast-" + std::to_string(n) + (dcqcn ? "-dcqcn" : "-none") + ".tsv";
    CHECK(write_tsv(r, path));
  }
  return r;
}

void check_dcqcn(int n) {
  const Timeline t = timeline(n);
  const IncastResult r = run(n, true);
  const auto share = r.mean_goodput(t.fair_from, t.stop);
  const double fair = jain(share);
  const double util = r.mean_link_gbps(t.fair_from, t.stop) * 1e9 / double(kLinkBps);
  const double below = r.time_below_kmin(t.fair_from, t.stop);
  const double above = r.time_above_kmax(t.fair_from, t.stop);
  const double solo = r.mean_link_gbps(t.solo_from, t.end) * 1e9 / double(kLinkBps);
  std::printf("incast %d:1 dcqcn-paper: Jain %.3f, utilisation %.3f, queue <= Kmin %.2f, > Kmax %.2f of the "
              "time (mean %.1f KB, max %.1f KB), drops %llu, marks %llu, CNPs %llu, retransmitted %llu, "
              "flow 0 alone %.3f of line rate; %.1f s wall\n",
              n, fair, util, below, above, r.bottleneck.mean_depth_bytes() / 1000,
              double(r.bottleneck.max_depth_bytes) / 1000, (unsigned long long)r.bottleneck.dropped(),
              (unsigned long long)r.bottleneck.marked, (unsigned long long)r.cnps_received(),
              (unsigned long long)r.retransmitted(), solo, r.wall_s);
  for (size_t i = 0; i < r.flows.size(); ++i) {
    INFO("flow " << i);
    CHECK_FALSE(r.flows[i].failed);
    CHECK(r.flows[i].cc.cnps_received > 0);
    CHECK(r.flows[i].receiver_cc.cnps_sent > 0);
  }
  CHECK(fair >= 0.95);
  CHECK(util >= 0.90);
  // DCQCN's queue oscillates (more so with more flows, as its fluid model
  // predicts): it is empty part of the time, but held at or below Kmax
  // for most of it and centred between Kmin and Kmax.
  CHECK(above <= 0.3);
  CHECK(r.bottleneck.mean_depth_bytes() > double(kRed.kmin_bytes));
  CHECK(r.bottleneck.mean_depth_bytes() <= double(kRed.kmax_bytes));
  CHECK(r.bottleneck.dropped() == 0);
  CHECK(r.retransmitted() == 0);
  CHECK(solo >= 0.90);
}

void check_none(int n) {
  const Timeline t = timeline(n);
  const IncastResult r = run(n, false);
  const auto share = r.mean_goodput(t.fair_from, t.stop);
  const double above = r.time_above_kmax(t.fair_from, t.stop);
  std::printf("incast %d:1 none: Jain %.3f, utilisation %.3f, queue > Kmax %.2f of the time (mean %.1f KB), "
              "drops %llu, retransmitted %llu, CNPs %llu; %.1f s wall\n",
              n, jain(share), r.mean_link_gbps(t.fair_from, t.stop) * 1e9 / double(kLinkBps), above,
              r.bottleneck.mean_depth_bytes() / 1000, (unsigned long long)r.bottleneck.dropped(),
              (unsigned long long)r.retransmitted(), (unsigned long long)r.cnps_received(), r.wall_s);
  CHECK(r.bottleneck.dropped() > 0);
  CHECK(r.retransmitted() > 0);
  CHECK(r.cnps_received() == 0);
  CHECK(above >= 0.5);  // a standing queue: marks are ignored
}

}  // namespace

TEST_CASE("2:1 incast with DCQCN", "[incast2]") { check_dcqcn(2); }
TEST_CASE("2:1 incast without congestion control", "[incast2]") { check_none(2); }
TEST_CASE("4:1 incast with DCQCN", "[incast4]") { check_dcqcn(4); }
TEST_CASE("4:1 incast without congestion control", "[incast4]") { check_none(4); }
TEST_CASE("8:1 incast with DCQCN", "[incast8]") { check_dcqcn(8); }
TEST_CASE("8:1 incast without congestion control", "[incast8]") { check_none(8); }
TEST_CASE("16:1 incast with DCQCN", "[incast16]") { check_dcqcn(16); }
TEST_CASE("16:1 incast without congestion control", "[incast16]") { check_none(16); }
