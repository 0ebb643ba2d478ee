// SPDX-License-Identifier: BSD-3-Clause
// Real time for an engine on a real port: the TSC, as DPDK calibrated it
// (rte_get_tsc_cycles / rte_get_tsc_hz). All TscClocks of a process agree.
#pragma once

#include "uroce/api.h"

#include <cstdint>

#include "uroce/port/clock.h"

namespace uroce {

class UROCE_API TscClock final : public Clock {
 public:
  // Reads the TSC frequency; the EAL must be initialised. Without it
  // (frequency 0) the clock falls back to std::chrono::steady_clock, for
  // good: construct it after eal_init, or every engine poll pays for a
  // clock_gettime (slow on some VMs) instead of an rdtsc.
  TscClock();

  // Nanoseconds since the TSC started (boot), or the steady clock's epoch.
  uint64_t now_ns() const override;
  uint64_t hz() const { return hz_; }

 private:
  uint64_t hz_;
  uint64_t mult_;  // nanoseconds per cycle, << 32
};

}  // namespace uroce
