// SPDX-License-Identifier: BSD-3-Clause
#include "perftest_glue.h"

#include <stdexcept>

#include "report.h"

namespace uroce::perf {

ibv_mtu mtu_enum(uint32_t bytes) {
  switch (bytes) {
    case 256: return IBV_MTU_256;
    case 512: return IBV_MTU_512;
    case 2048: return IBV_MTU_2048;
    case 4096: return IBV_MTU_4096;
    default: return IBV_MTU_1024;
  }
}

uint32_t mtu_bytes(int e) { return 128u << e; }

uint32_t path_mtu_for(uint16_t port_mtu) {
  uint32_t m = 4096;
  while (m > 256 && m + 80 > port_mtu) m /= 2;
  return m;
}

exchange::PerftestDest to_dest(const PeerInfo& p) {
  exchange::PerftestDest d;
  d.out_reads = p.out_reads;
  d.qpn = p.qpn;
  d.psn = p.psn;
  d.rkey = p.rkey;
  d.vaddr = p.vaddr;
  d.gid = p.gid;
  return d;
}

PeerInfo to_info(const exchange::PerftestDest& d) {
  PeerInfo p;
  p.qpn = d.qpn;
  p.psn = d.psn;
  p.rkey = d.rkey;
  p.vaddr = d.vaddr;
  p.out_reads = d.out_reads;
  p.gid = d.gid;
  return p;
}

exchange::PerftestBwReport report_of(const BwResult& r, const Options& o) {
  const double unit = o.report_gbits ? 125e6 : 1048576.0;
  exchange::PerftestBwReport p;
  p.size = r.size;
  p.iters = r.iters;
  p.bw_peak = r.peak_bps / unit;
  p.bw_avg = r.avg_bps / unit;
  p.msg_rate_avg = r.msg_rate / 1e6;
  return p;
}

BwResult result_of(const Options& o, const exchange::PerftestBwReport& p) {
  const double unit = o.report_gbits ? 125e6 : 1048576.0;
  BwResult r;
  r.size = p.size;
  r.iters = p.iters;
  r.peak_bps = p.bw_peak * unit;
  r.avg_bps = p.bw_avg * unit;
  r.msg_rate = p.msg_rate_avg * 1e6;
  return r;
}

BwResult print_bw_report(const Options& o, const exchange::PerftestBwReport& p) {
  const BwResult r = result_of(o, p);
  print_bw_row(o, r);
  return r;
}

uint64_t Watchdog::seen() const { return progress_ ? *progress_ : dev_.counters().rx_frames; }

void Watchdog::reset() {
  frames_ = seen();
  next_look_ = std::chrono::steady_clock::now();
  until_ = next_look_ + timeout_;
}

// The device's counters sum every QP's and pause the engine thread: with
// thousands of QPs they are read a few times a second, not every few
// thousand calls (which, in the per-QP exchange, took most of the time).
void Watchdog::check() {
  if (++calls_ % 4096) return;
  const auto now = std::chrono::steady_clock::now();
  if (now < next_look_) return;
  next_look_ = now + std::chrono::milliseconds(100);
  const uint64_t f = seen();
  if (f != frames_) return reset();
  if (std::chrono::steady_clock::now() > until_)
    throw std::runtime_error("the peer went silent: no exchange and no RoCE frame for " +
                             std::to_string(timeout_.count() / 1000) + " s");
}

}  // namespace uroce::perf
