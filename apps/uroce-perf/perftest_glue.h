// SPDX-License-Identifier: BSD-3-Clause
// The glue between uroce-perf's endpoints and perftest's exchange: QP
// records, MTU enums, bw reports, and the watchdog of a waiting server.
#pragma once

#include <chrono>

#include "endpoint.h"
#include "runner.h"
#include "uroce/exchange/perftest.h"
#include "uroce/exchange/tcp_channel.h"

namespace uroce::perf {

ibv_mtu mtu_enum(uint32_t bytes);
uint32_t mtu_bytes(int ibv_mtu_value);
// rxe's rule: the largest IB MTU that fits the port with 80 bytes of headers.
uint32_t path_mtu_for(uint16_t port_mtu);

exchange::PerftestDest to_dest(const PeerInfo& p);
PeerInfo to_info(const exchange::PerftestDest& d);

// What perftest's client sends in xchg_bw_reports, in its report unit.
exchange::PerftestBwReport report_of(const BwResult& r, const Options& o);
// A peer's report as a result (both in the report unit of -x, --report_gbits).
BwResult result_of(const Options& o, const exchange::PerftestBwReport& p);
// The server prints the client's report as it came (perftest does too);
// returns it as a result for the JSON report.
BwResult print_bw_report(const Options& o, const exchange::PerftestBwReport& p);

// The server waits on the exchange while the client runs the test; it
// gives up only when neither the exchange nor the link shows life for
// the timeout (a run may be long, but it is never silent).
class Watchdog {
 public:
  Watchdog(Device& dev, exchange::Millis timeout) : dev_(dev), timeout_(timeout) { reset(); }
  void reset();
  void check();  // throws std::runtime_error when the peer went silent
  // The peer spoke on the exchange (a QP record): alive, without reading
  // the device's counters.
  void alive() { until_ = std::chrono::steady_clock::now() + timeout_; }
  // What counts as life: frames the device received, unless `progress`
  // (a counter of the raw tests, which bypass the device) is set.
  void watch(const uint64_t* progress) {
    progress_ = progress;
    reset();
  }

 private:
  uint64_t seen() const;
  Device& dev_;
  const uint64_t* progress_ = nullptr;
  exchange::Millis timeout_;
  uint64_t frames_ = 0;
  uint64_t calls_ = 0;
  std::chrono::steady_clock::time_point until_, next_look_;
};

}  // namespace uroce::perf
