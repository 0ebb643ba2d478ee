// SPDX-License-Identifier: BSD-3-Clause
// Randomized model-based property test of the RC transport: several QP
// pairs between three devices run random mixes of every opcode, 0 bytes to
// several MB, random path MTU, and the result must equal the model's: each
// WR completes exactly once, in order per QP, with the right status, opcode
// and length, and every registered byte ends as the model says. Fixed seeds;
// a failure prints its seed and fault mix, and the scenario is reproducible
// from them alone.
//
// Wider soak by hand: UROCE_PROPERTY_SEEDS=1000-1199 runs those seeds
// instead of the fixed ones (the lossy test picks the fault mix by seed).
// UROCE_PROPERTY_PART=K/N runs the Kth of N interleaved parts of the seeds
// (1/2: the first, third, ...), so that parts can share the cores.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <sstream>
#include <string>

#include "model_harness.h"
#include "model_workload.h"

using namespace uroce;
using namespace uroce::test::model;

namespace {

struct Mix {
  const char* name;
  sim::LinkFaults faults;
  uint8_t min_timeout = 0;  // see HarnessOptions::min_timeout
};

sim::LinkFaults faults(double loss, double reorder, double duplicate, double corrupt) {
  sim::LinkFaults f;
  f.loss = loss;
  f.reorder = reorder;
  f.duplicate = duplicate;
  f.corrupt = corrupt;
  return f;
}

// Fault mixes of up to 10 % of the frames in total.
std::vector<Mix> mixes() {
  std::vector<Mix> m;
  m.push_back({"loss 10%", faults(0.10, 0, 0, 0)});
  sim::LinkFaults burst = faults(0.02, 0.03, 0, 0);
  // Bad 3.8 % of the frames, half of them lost: about 2 %. The chain steps
  // per frame, so on an idle link a bad state outlasts timeouts; a longer or
  // lossier bad state would rightly exhaust retry_cnt on a lone retransmission.
  burst.burst = {0.02, 0.5, 0.5};
  m.push_back({"burst loss 2% + loss 2% + reorder 3%", burst});
  sim::LinkFaults reorder = faults(0, 0.06, 0.04, 0);
  reorder.reorder_delay_ns = 20'000;
  m.push_back({"reorder 6% (20 us) + duplicate 4%", reorder});
  m.push_back({"corrupt 5% + duplicate 5%", faults(0, 0, 0.05, 0.05)});
  m.push_back({"loss 3% + reorder 3% + duplicate 2% + corrupt 2%", faults(0.03, 0.03, 0.02, 0.02)});
  sim::LinkFaults slow = faults(0.02, 0.04, 0.02, 0.02);
  slow.latency_ns = 5'000;
  slow.bandwidth_bps = 40'000'000'000ull;
  m.push_back({"40 Gb/s, 5 us + loss 2% + reorder 4% + duplicate 2% + corrupt 2%", slow, 14});
  // Stale copies arriving long after the PSN moved on.
  sim::LinkFaults late = faults(0.01, 0.04, 0.05, 0);
  late.reorder_delay_ns = 400'000;
  late.duplicate_delay_ns = 250'000;
  m.push_back({"late duplicates 5% (250 us) + reorder 4% (400 us) + loss 1%", late});
  return m;
}

// The fixed seeds, or the range in UROCE_PROPERTY_SEEDS ("first-last");
// of those, the part UROCE_PROPERTY_PART ("K/N") names.
std::vector<uint64_t> seeds_or_env(std::vector<uint64_t> seeds) {
  if (const char* env = std::getenv("UROCE_PROPERTY_SEEDS")) {
    const std::string range(env);
    const size_t dash = range.find('-');
    const uint64_t first = std::stoull(range.substr(0, dash));
    const uint64_t last = dash == std::string::npos ? first : std::stoull(range.substr(dash + 1));
    seeds.clear();
    for (uint64_t s = first; s <= last; ++s) seeds.push_back(s);
  }
  const char* part = std::getenv("UROCE_PROPERTY_PART");
  if (part == nullptr) return seeds;
  const std::string kn(part);
  const size_t slash = kn.find('/');
  const size_t k = std::stoul(kn.substr(0, slash));
  const size_t n = slash == std::string::npos ? 0 : std::stoul(kn.substr(slash + 1));
  if (n == 0 || k == 0 || k > n) FAIL("UROCE_PROPERTY_PART=" << kn << ": not K/N with 1 <= K <= N");
  std::vector<uint64_t> mine;
  for (size_t i = k - 1; i < seeds.size(); i += n) mine.push_back(seeds[i]);
  return mine;
}

std::string summary(const Outcome& out) {
  std::ostringstream o;
  const auto& t = out.transport;
  const auto& w = out.wire;
  o << "completions " << out.completions << ", virtual " << out.virtual_ns / 1000 << " us, wall " << out.wall_s
    << " s\nwire: sent " << w.sent << " lost " << w.lost << " (burst " << w.burst_lost << ") reordered "
    << w.reordered << " duplicated " << w.duplicated << " corrupted " << w.corrupted << "\ntransport: sent "
    << t.sent_pkts << " retransmitted " << t.retransmitted_pkts << " timeouts " << t.local_ack_timeout_err
    << " seq NAKs " << t.rcvd_seq_err << " RNR " << t.rcvd_rnr_err << " duplicates " << t.duplicate_request
    << " out of sequence " << t.out_of_seq_request << "\ndevices: tx_no_mbuf " << out.tx_no_mbuf << " rx_icrc_err "
    << out.rx_icrc_err << " rx_invalid " << out.rx_invalid;
  return o.str();
}

void check(const Outcome& out) {
  INFO(summary(out));
  CHECK(out.findings.empty());
  for (size_t i = 0; i < out.findings.size() && i < 12; ++i) FAIL_CHECK(out.findings[i]);
}

}  // namespace

TEST_CASE("RC transport equals the model on a clean wire", "[property][property-clean]") {
  WorkloadConfig cfg;
  cfg.byte_budget = 40ull << 20;
  for (uint64_t seed : seeds_or_env({101, 102, 103, 104, 105, 106})) {
    const Scenario s = generate(seed, cfg);
    INFO("seed " << seed << " (clean wire), " << s.total_payload() << " payload bytes\n" << s.describe());
    const Outcome out = run_scenario(s, HarnessOptions{});
    check(out);
  }
}

TEST_CASE("RC transport equals the model under loss, reorder, duplication and corruption",
          "[property][property-lossy]") {
  const auto m = mixes();
  WorkloadConfig cfg;
  cfg.byte_budget = 24ull << 20;
  for (uint64_t seed : seeds_or_env({201, 202, 203, 204, 205, 206, 207, 208})) {
    const Mix& mix = m[seed % m.size()];
    const Scenario s = generate(seed, cfg);
    INFO("seed " << seed << ", faults: " << mix.name << ", " << s.total_payload() << " payload bytes\n"
                 << s.describe());
    HarnessOptions o;
    o.faults = mix.faults;
    o.min_timeout = mix.min_timeout;
    const Outcome out = run_scenario(s, o);
    check(out);
    // The faults really happened, and the transport really recovered from them.
    CHECK(out.wire.lost + out.wire.duplicated + out.wire.corrupted + out.wire.reordered > 0);
    CHECK(out.transport.retransmitted_pkts > 0);
  }
}
