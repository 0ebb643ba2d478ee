// SPDX-License-Identifier: BSD-3-Clause
#include "uroce/port/tsc_clock.h"

#include <rte_cycles.h>

#include <chrono>

namespace uroce {

// ns = cycles * mult >> 32 with mult = 1e9 * 2^32 / hz: one multiply
// instead of the three divisions of cycles * 1e9 / hz, since the engine
// reads the clock on every poll. mult is exact to 1 part in ~2^31 (a drift
// of well under a millisecond a day), the same for every TscClock.
TscClock::TscClock()
    : hz_(rte_get_tsc_hz()), mult_(hz_ ? uint64_t((unsigned __int128)1'000'000'000u << 32) / hz_ : 0) {}

uint64_t TscClock::now_ns() const {
  if (hz_ == 0)
    return uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(
                        std::chrono::steady_clock::now().time_since_epoch())
                        .count());
  return uint64_t(((unsigned __int128)rte_get_tsc_cycles() * mult_) >> 32);
}

}  // namespace uroce
