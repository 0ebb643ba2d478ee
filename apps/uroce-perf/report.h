// SPDX-License-Identifier: BSD-3-Clause
// perftest's banner and result tables, and the same results as JSON.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "endpoint.h"
#include "runner.h"

namespace uroce::perf {

void print_banner(const Options& o, const std::string& device, uint32_t mtu, const PeerInfo& local,
                  const PeerInfo& remote);
void print_bw_header(const Options& o);
void print_bw_row(const Options& o, const BwResult& r);
void print_lat_header();
void print_lat_row(const LatResult& r);
// raw_lat --raw-acks: how many ACK-sized frames came with the frames (the
// client's, or in --loopback both ends': twice the iterations).
void print_ack_frames(const LatResult& r);
void print_footer();

// Per QP: congestion-control state and counters (R_C, R_T, α, CNPs, CE
// marks), after the run; nothing with --cc none unless marks were seen.
void print_cc_stats(const Options& o, const char* side, Endpoint& ep);

// The same per QP for --out_json: {"client": {...}} (or "server"), with the
// algorithm, line rate and a "qps" array; empty when print_cc_stats would
// print nothing.
nlohmann::json cc_stats_json(const Options& o, const char* side, Endpoint& ep);

// --out_json / --out_json_file: one object with the parameters, a row per
// size and, when not empty, "cc" (cc_stats_json of the sides in this
// process). Returns false (with error) if the file cannot be written.
bool write_json(const Options& o, const std::vector<BwResult>& bw, const std::vector<LatResult>& lat,
                const nlohmann::json& cc, std::string& error);

}  // namespace uroce::perf
