// SPDX-License-Identifier: BSD-3-Clause
// The per-QP congestion-control lines printed after a run.
#include <cstdio>

#include "report.h"

namespace uroce::perf {

namespace {

// Worth reporting: congestion control on, or marks seen without it.
bool any_cc(const Options& o, Endpoint& ep) {
  bool any = o.cc.algo != cc::CcAlgo::none;
  for (size_t q = 0; q < ep.qp_count() && !any; ++q) any = ep.qp(q).cc_stats().ecn_marks > 0;
  return any;
}

}  // namespace

nlohmann::json cc_stats_json(const Options& o, const char* side, Endpoint& ep) {
  nlohmann::json j = nlohmann::json::object();
  if (!any_cc(o, ep)) return j;
  nlohmann::json qps = nlohmann::json::array();
  for (size_t q = 0; q < ep.qp_count(); ++q) {
    const cc::CcStats s = ep.qp(q).cc_stats();
    qps.push_back({{"qp_num", ep.qp(q).qp_num()}, {"rate_mbps", s.rate_mbps}, {"limited", s.limited},
                   {"target_mbps", s.target_mbps}, {"alpha", s.alpha}, {"cnps_sent", s.cnps_sent},
                   {"cnps_received", s.cnps_received}, {"ecn_marks", s.ecn_marks},
                   {"rate_decreases", s.rate_decreases}, {"rate_increases", s.rate_increases},
                   {"paced_waits", s.paced_waits}});
  }
  j[side] = {{"algorithm", o.cc.algo == cc::CcAlgo::none ? "none" : "dcqcn"},
             {"line_rate_mbps", o.cc.line_rate_mbps}, {"qps", qps}};
  return j;
}

void print_cc_stats(const Options& o, const char* side, Endpoint& ep) {
  if (!any_cc(o, ep)) return;
  std::printf(" uroce cc (%s): %s, line rate %lu Mb/s\n", side,
              o.cc.algo == cc::CcAlgo::none ? "none" : "dcqcn", (unsigned long)o.cc.line_rate_mbps);
  for (size_t q = 0; q < ep.qp_count(); ++q) {
    const cc::CcStats s = ep.qp(q).cc_stats();
    std::printf("  qp 0x%06x: rate %.1f Mb/s%s target %.1f alpha %.4f | CNPs sent %lu received %lu | "
                "CE marks %lu | decreases %lu increases %lu paced waits %lu\n",
                ep.qp(q).qp_num(), s.rate_mbps, s.limited ? " (limited)" : "", s.target_mbps, s.alpha,
                (unsigned long)s.cnps_sent, (unsigned long)s.cnps_received, (unsigned long)s.ecn_marks,
                (unsigned long)s.rate_decreases, (unsigned long)s.rate_increases, (unsigned long)s.paced_waits);
  }
}

}  // namespace uroce::perf
