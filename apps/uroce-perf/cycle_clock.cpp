// SPDX-License-Identifier: BSD-3-Clause
#include "cycle_clock.h"

#include <rte_cycles.h>

namespace uroce::perf {
namespace {

// Nanoseconds per cycle << 32 (see TscClock), 0 without a TSC frequency.
uint64_t ns_per_cycle_q32() {
  static const uint64_t mult = [] {
    const uint64_t hz = rte_get_tsc_hz();
    return hz ? uint64_t((unsigned __int128)1'000'000'000u << 32) / hz : 0;
  }();
  return mult;
}

}  // namespace

CycleClock::time_point CycleClock::now() noexcept {
  const uint64_t mult = ns_per_cycle_q32();
  if (mult == 0) return time_point(std::chrono::steady_clock::now().time_since_epoch());
  return time_point(duration(int64_t(((unsigned __int128)rte_rdtsc() * mult) >> 32)));
}

uint64_t CycleClock::cycles() noexcept {
  if (ns_per_cycle_q32() == 0) return uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count());
  return rte_rdtsc();
}

double CycleClock::cycles_per_usec() noexcept {
  return ns_per_cycle_q32() == 0 ? 1000.0 : double(rte_get_tsc_hz()) / 1e6;
}

}  // namespace uroce::perf
