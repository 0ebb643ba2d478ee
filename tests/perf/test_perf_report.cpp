// SPDX-License-Identifier: BSD-3-Clause
// perftest's latency figures from the client's post stamps (report.cpp):
// the gaps between posts, the two largest left out, t_max the second
// largest, perftest's median and percentiles, and its int arithmetic in
// the stdev (-nan once a deviation's square leaves an int).
#include <catch2/catch.hpp>

#include <cmath>

#include "cycle_clock.h"
#include "report.h"

using namespace uroce::perf;

namespace {

// Stamps whose gaps are `gaps`, in cycles.
LatResult stamps(const std::vector<uint64_t>& gaps) {
  LatResult r;
  r.posted.push_back(1000);
  for (uint64_t g : gaps) r.posted.push_back(r.posted.back() + g);
  r.iters = r.posted.size();
  return r;
}

Options cycles(Verb v) {
  Options o;
  o.kind = Kind::lat;
  o.verb = v;
  o.report_cycles = true;
  return o;
}

}  // namespace

TEST_CASE("latency figures are perftest's, from the gaps between posts") {
  // 19 gaps of 20 posts: 100..116, and two outliers that only t_max may see.
  std::vector<uint64_t> g;
  for (uint64_t i = 0; i < 17; ++i) g.push_back(116 - i);
  g.push_back(5000);
  g.push_back(900);
  const LatStats s = lat_stats(cycles(Verb::read), stamps(g));
  CHECK(s.iters == 20);
  CHECK(s.min == 100);
  CHECK(s.max == 900);      // the second largest
  CHECK(s.typical == 108);  // 17 kept: the middle one
  CHECK(s.avg == Approx(108));
  CHECK(s.p99 == 900);      // ceil(17 * 0.99) = 17: past the kept ones
  CHECK(s.stdev == Approx(std::sqrt(2.0 * (64 + 49 + 36 + 25 + 16 + 9 + 4 + 1) / 17)));
}

TEST_CASE("SEND and WRITE halve a gap; an even count's median is the middle pair's mean in whole cycles") {
  std::vector<uint64_t> g{10, 11, 20, 21, 1000, 2000};  // 4 kept
  const LatStats s = lat_stats(cycles(Verb::write), stamps(g));
  CHECK(s.min == 5);
  CHECK(s.typical == 7.5);  // (11 + 20) / 2 = 15 cycles, halved
  CHECK(s.max == 500);
}

TEST_CASE("a deviation whose square leaves an int gives perftest's -nan") {
  std::vector<uint64_t> small{1000, 1000, 1000, 1000, 40000, 1000, 1000, 99999, 99999};
  CHECK(std::isfinite(lat_stats(cycles(Verb::read), stamps(small)).stdev));
  std::vector<uint64_t> big{1000, 200000, 1000, 200000, 1000, 200000, 999999, 999999};  // deviations of 99500
  const double sd = lat_stats(cycles(Verb::read), stamps(big)).stdev;
  CHECK(std::isnan(sd));
  CHECK(std::signbit(sd));  // printed "-nan", as perftest prints it
}

TEST_CASE("-D: the counted round trips over their time, not a sample count") {
  Options o = cycles(Verb::send);
  o.duration = 2;
  LatResult r;
  r.iters = 50000000;  // more round trips than any bounded sample store would hold
  r.window_cycles = uint64_t(4e6 * CycleClock::cycles_per_usec());  // 4 s of round trips
  const LatStats s = lat_stats(o, r);
  CHECK(s.iters == 50000000);
  CHECK(s.avg == Approx(4e6 / 2 / 50000000));  // half a round trip, in usec
  CHECK(s.tps == Approx(50000000 / 4.0));
}
