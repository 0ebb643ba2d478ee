// SPDX-License-Identifier: BSD-3-Clause
// N:1 incast in virtual time: N uroce senders, each with one RC QP
// streaming RDMA WRITEs, into one receiver through the simulated switch
// (sim_switch.h), whose egress toward the receiver is the bottleneck.
// Sender i starts at i * start_gap_ns (as flows join a busy link; started
// together, N windows of 128 packets would hit the queue before any
// congestion signal could come back, with or without DCQCN). Senders
// 1..N-1 stop at stop_others_ns; sender 0 goes on alone, so a test can see
// it regain line rate.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "uroce/cc/dcqcn.h"
#include "uroce/sim/sim_switch.h"
#include "uroce/verbs/counters.h"

namespace uroce::test {

struct IncastConfig {
  int senders = 2;
  uint64_t link_bps = 10'000'000'000;  // the receiver's port: the bottleneck
  uint64_t sender_bps = 0;             // the senders' ports; 0 = link_bps
  uint64_t cable_ns = 1'000;           // each cable, each way
  uint64_t fabric_ns = 500;            // through the switch
  uint64_t buffer_bytes = 400'000;     // the bottleneck's egress queue
  sim::RedEcn red{};
  cc::CcConfig cc{};                   // every device (line_rate_mbps set from link_bps)
  uint32_t msg_bytes = 16384;          // one WRITE
  uint32_t depth = 16;                 // WRITEs outstanding per sender
  uint64_t start_gap_ns = 200'000;
  uint64_t run_ns = 20'000'000;
  uint64_t stop_others_ns = 15'000'000;
  uint64_t sample_ns = 100'000;        // time-series period
  uint64_t seed = 1;
};

// One row of the time series: each flow's goodput (completed WRITE bytes)
// over the last period, its DCQCN rate, and the bottleneck queue.
struct IncastSample {
  uint64_t t_ns = 0;
  std::vector<double> goodput_gbps;
  std::vector<double> rc_gbps;
  std::vector<double> alpha;  // each flow's DCQCN alpha
  uint64_t queue_bytes = 0;
  double link_gbps = 0;  // what the bottleneck port sent (headers included) over the period
  // Since the start, cumulative (SwitchCounters): ns of queue <= kmin, > kmax,
  // and the queue's integral in byte*ns.
  double below_kmin_ns = 0, above_kmax_ns = 0, depth_byte_ns = 0;
};

struct IncastFlow {
  uint64_t bytes = 0;  // completed
  TransportCounters counters;
  cc::CcStats cc;           // sender side
  cc::CcStats receiver_cc;  // the receiver's QP of this flow
  uint64_t queue_dropped = 0;
  uint64_t ecn_marked = 0;
  bool failed = false;      // a completion with an error status
};

struct IncastResult {
  std::vector<IncastSample> samples;
  std::vector<IncastFlow> flows;
  sim::SwitchCounters bottleneck;  // over the whole run
  double wall_s = 0;

  // Mean goodput of each flow over samples with t in (from, to].
  std::vector<double> mean_goodput(uint64_t from_ns, uint64_t to_ns) const;
  // Mean bottleneck throughput (headers included) over (from, to].
  double mean_link_gbps(uint64_t from_ns, uint64_t to_ns) const;
  // Shares of the time in (from, to] (multiples of sample_ns) the queue
  // spent at or below kmin, and above kmax.
  double time_below_kmin(uint64_t from_ns, uint64_t to_ns) const;
  double time_above_kmax(uint64_t from_ns, uint64_t to_ns) const;
  // The mean queue over (from, to], bytes; both must be sample times.
  double mean_queue_bytes(uint64_t from_ns, uint64_t to_ns) const;
  uint64_t retransmitted() const;
  uint64_t cnps_received() const;
};

IncastResult run_incast(const IncastConfig& cfg);

// Jain's fairness index: (sum x)^2 / (n sum x^2); 1 = equal shares.
double jain(const std::vector<double>& x);

// Writes the time series as TSV (t_ms, queue_kb, link_gbps, then
// goodput_i and rc_i in Gb/s and alpha_i per flow); false if the file cannot be written.
bool write_tsv(const IncastResult& r, const std::string& path);

}  // namespace uroce::test
