// The per-QP congestion-control lines printed after a run.
#include <cstdio>

#include "report.h"

namespace uroce::perf {

void print_cc_stats(const Options& o, const char* side, Endpoint& ep) {
  bool any = o.cc.algo != cc::CcAlgo::none;
  for (size_t q = 0; q < ep.qp_count() && !any; ++q) any = ep.qp(q).cc_stats().ecn_marks > 0;
  if (!any) return;
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
