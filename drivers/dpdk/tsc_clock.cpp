#include "uroce/port/tsc_clock.h"

#include <rte_cycles.h>

#include <chrono>

namespace uroce {

TscClock::TscClock() : hz_(rte_get_tsc_hz()) {}

uint64_t TscClock::now_ns() const {
  if (hz_ == 0)
    return uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(
                        std::chrono::steady_clock::now().time_since_epoch())
                        .count());
  const uint64_t c = rte_get_tsc_cycles();
  // Split so that nothing overflows: rem * 1e9 < hz * 1e9 < 2^64 for any
  // TSC below 18 GHz.
  return c / hz_ * 1'000'000'000ull + c % hz_ * 1'000'000'000ull / hz_;
}

}  // namespace uroce
