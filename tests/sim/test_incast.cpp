// SPDX-License-Identifier: BSD-3-Clause
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
// The marking (docs/dcqcn-experiments.md, "Choosing the parameters"): the
// paper's Kmin of 5 KB; the ns-3 DCQCN model's Kmax and Pmax (HPCC
// repository, run.py: Kmax 400 KB at 25 Gb/s, scaled with the link rate
// as it scales them, so 160 KB at 10 Gb/s; Pmax 20 %). With the paper's own
// 5/200 KB and 1 % (or Kmax scaled to 50 KB) the 16 flows' fixed point lies
// above Kmax and the queue swings between empty and Kmax instead.
// The buffer holds that queue plus the window (128 packets, 138 KB) a
// joining flow sends before its first CNP takes effect, but not two windows:
// without congestion control even two flows overflow it.
constexpr sim::RedEcn kRed{5'000, 160'000, 0.2, true};
constexpr uint64_t kBuffer = 250'000;

// The paper preset is made for 40 Gb/s; its rate steps and byte counter are
// scaled to this link as the ns-3 model's run.py scales its steps with the
// link rate (time constants unchanged): R_AI 40 -> 10 Mb/s, R_HAI 400 ->
// 100 Mb/s, B 10 MiB -> 2.5 MiB. Unscaled, 16 flows' additive increase adds
// 6.4 % of this link per 55 us timer period (1.6 % of the paper's), and the
// queue oscillates between empty and above Kmax whatever the marking.
constexpr const char* kPaperAt10G[] = {"rpg_ai_rate=10", "rpg_hai_rate=100", "rpg_byte_reset=2621440"};

// Flows join 0.5 ms apart. α starts at 1, so the join cuts every flow deep
// (to about a third of its share at N = 2), and additive increase at 10 Mb/s per
// 55 us needs ~20 ms to climb back: the fair share and the queue are judged
// over 20 ms from 30 ms after the last join. Then all but flow 0 stop; it
// has 60 ms to regain line rate (~40 ms from 0.6 Gb/s at N = 16: additive,
// then hyper increase once the byte counter has passed F = 5 stages).
struct Timeline {
  uint64_t fair_from, stop, solo_from, end;
};

Timeline timeline(int n) {
  const uint64_t last_join = uint64_t(n - 1) * kMs / 2;
  Timeline t;
  t.fair_from = last_join + 30 * kMs;
  t.stop = t.fair_from + 20 * kMs;
  t.end = t.stop + 60 * kMs;
  t.solo_from = t.end - 5 * kMs;
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
    for (const char* p : kPaperAt10G) REQUIRE(cc::apply_cc_param(p, c.cc, err));
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
  const double between = 1.0 - below - above;
  const double mean_q = r.mean_queue_bytes(t.fair_from, t.stop);
  const double solo = r.mean_link_gbps(t.solo_from, t.end) * 1e9 / double(kLinkBps);
  std::printf("incast %d:1 dcqcn-paper at 10 Gb/s: Jain %.3f, utilisation %.3f, queue <= Kmin %.2f, between %.2f, "
              "> Kmax %.2f of the time (mean %.1f KB; max %.1f KB over the run), drops %llu, marks %llu, CNPs %llu, "
              "retransmitted %llu, flow 0 alone %.3f of line rate; %.1f s wall\n",
              n, fair, util, below, between, above, mean_q / 1000, double(r.bottleneck.max_depth_bytes) / 1000,
              (unsigned long long)r.bottleneck.dropped(), (unsigned long long)r.bottleneck.marked,
              (unsigned long long)r.cnps_received(), (unsigned long long)r.retransmitted(), solo, r.wall_s);
  for (size_t i = 0; i < r.flows.size(); ++i) {
    INFO("flow " << i);
    CHECK_FALSE(r.flows[i].failed);
    CHECK(r.flows[i].cc.cnps_received > 0);
    CHECK(r.flows[i].receiver_cc.cnps_sent > 0);
  }
  CHECK(fair >= 0.95);
  CHECK(util >= 0.90);
  // The "queue held mostly between Kmin and Kmax": more than half
  // of the judged time, exactly (the switch integrates the queue).
  CHECK(between > 0.5);
  CHECK(mean_q > double(kRed.kmin_bytes));
  CHECK(mean_q <= double(kRed.kmax_bytes));
  CHECK(r.bottleneck.dropped() == 0);
  CHECK(r.retransmitted() == 0);
  CHECK(solo >= 0.90);
}

void check_none(int n) {
  const Timeline t = timeline(n);
  const IncastResult r = run(n, false);
  const auto share = r.mean_goodput(t.fair_from, t.stop);
  const double below = r.time_below_kmin(t.fair_from, t.stop);
  const double above = r.time_above_kmax(t.fair_from, t.stop);
  std::printf("incast %d:1 none: Jain %.3f, utilisation %.3f, queue <= Kmin %.2f, > Kmax %.2f of the time (mean %.1f "
              "KB), drops %llu, retransmitted %llu, CNPs %llu; %.1f s wall\n",
              n, jain(share), r.mean_link_gbps(t.fair_from, t.stop) * 1e9 / double(kLinkBps), below, above,
              r.mean_queue_bytes(t.fair_from, t.stop) / 1000, (unsigned long long)r.bottleneck.dropped(),
              (unsigned long long)r.retransmitted(), (unsigned long long)r.cnps_received(), r.wall_s);
  CHECK(r.bottleneck.dropped() > 0);
  CHECK(r.retransmitted() > 0);
  CHECK(r.cnps_received() == 0);
  // A standing queue (marks are ignored): it never drains to Kmin.
  CHECK(below <= 0.05);
  CHECK(r.mean_queue_bytes(t.fair_from, t.stop) > double(kRed.kmin_bytes) * 10);
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
