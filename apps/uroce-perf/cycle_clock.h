// SPDX-License-Identifier: BSD-3-Clause
// A std::chrono clock on the TSC, for the latency and duration stamps of
// the tests: perftest stamps with get_cycles() too, and clock_gettime
// costs more than a whole 8-byte round trip's share of work on some VMs.
// The first now() must come after eal_init (which measures the TSC
// frequency); without one it is the steady clock.
#pragma once

#include <chrono>
#include <cstdint>

namespace uroce::perf {

struct CycleClock {
  using rep = int64_t;
  using period = std::nano;
  using duration = std::chrono::nanoseconds;
  using time_point = std::chrono::time_point<CycleClock>;
  static constexpr bool is_steady = true;
  static time_point now() noexcept;
  // The raw count, for perftest's figures in cycles (-C); the steady
  // clock's nanoseconds without a TSC frequency.
  static uint64_t cycles() noexcept;
  static double cycles_per_usec() noexcept;
};

}  // namespace uroce::perf
