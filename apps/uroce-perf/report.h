// SPDX-License-Identifier: BSD-3-Clause
// perftest's banner and result tables (line for line what perftest 4.5
// prints), and its JSON report with the same keys and units.
#pragma once

#include <cstdio>

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "endpoint.h"
#include "runner.h"

namespace uroce::perf {

// What the banner shows beyond the options: perftest prints the TX depth
// on a client, the RX depth on a SEND server, and one address pair per QP.
struct RunInfo {
  std::string device;
  uint32_t mtu = 1024;  // the path MTU; raw tests: the frame size
  bool server = false;
  std::vector<PeerInfo> local, remote;
};

// Only --output=table prints banners, headers and lines; the other
// --output modes print one number per size.
bool full_output(const Options& o);

void print_waiting_for_client(const Options& o);
void print_banner(const Options& o, const RunInfo& run);
void print_bw_header(const Options& o);
void print_bw_row(const Options& o, const BwResult& r);
void print_lat_header(const Options& o);
// With -U the samples as measured, with -H sorted, then the row (or the
// average alone with --output=latency).
void print_lat_row(const Options& o, const LatResult& r);
// raw_lat --raw-acks: how many ACK-sized frames came with the frames (the
// client's, or in --loopback both ends': twice the iterations).
void print_ack_frames(const LatResult& r);
void print_footer(const Options& o);
// --resources: what a long-running process holds, on one line:
// "resources: rss_kb=N mbufs_in_use=N memzones=N heap_bytes=N" (resident
// set, mbufs out of every mempool, DPDK memzones, DPDK heap in use).
void print_resources(std::FILE* out);

// Per QP: congestion-control state and counters (R_C, R_T, α, CNPs, CE
// marks), after the run; nothing with --cc none unless marks were seen.
void print_cc_stats(const Options& o, const char* side, Endpoint& ep);

// The same per QP for the JSON report: {"client": {...}} (or "server"),
// with the algorithm, line rate and a "qps" array; empty when
// print_cc_stats would print nothing.
nlohmann::json cc_stats_json(const Options& o, const char* side, Endpoint& ep);

// The JSON report's path: --out_json_file, or perftest_out.json in the
// working directory for --out_json alone; empty when neither was given.
std::string json_path(const Options& o);
// Checked before the run (perftest would only find out at its end): false
// with the reason when the file cannot be created or written.
bool check_json_path(const Options& o, std::string& error);

// perftest's report: {"test_info": {...}, "results": {...}} of the last
// size (perftest rewrites the file per size), plus "cc" when not empty.
// Nothing when json_path is empty or there is no result.
bool write_json(const Options& o, const RunInfo& run, const std::vector<BwResult>& bw,
                const std::vector<LatResult>& lat, const nlohmann::json& cc, std::string& error);

// perftest's latency figures of a run's post stamps (usec, or cycles with -C;
// -D: the average and tps alone).
struct LatStats {
  uint64_t iters = 0;
  double min = 0, max = 0, typical = 0, avg = 0, stdev = 0, p99 = 0, p999 = 0;
  double tps = 0;  // -D: round trips per second
};
LatStats lat_stats(const Options& o, const LatResult& r);

}  // namespace uroce::perf
