// SPDX-License-Identifier: BSD-3-Clause
// Virtual time for the simulated wire: it moves only when the driver loop
// says so, so millisecond timers expire instantly and runs are repeatable.
#pragma once

#include <cstdint>

#include "uroce/port/clock.h"

namespace uroce::sim {

class VirtualClock final : public Clock {
 public:
  explicit VirtualClock(uint64_t start_ns = 0) : now_(start_ns) {}

  uint64_t now_ns() const override { return now_; }
  // Free unless a test says otherwise, to run the engine's real-clock
  // economies (lean idle polls, kept times) on the deterministic wire.
  bool free_to_read() const override { return free_; }
  void set_free_to_read(bool free) { free_ = free; }

  // Time never goes backwards: an earlier target is ignored, because a
  // driver loop may legitimately ask for a deadline that already passed.
  void advance_to(uint64_t t_ns) {
    if (t_ns > now_) now_ = t_ns;
  }
  void advance_by(uint64_t d_ns) { now_ += d_ns; }

 private:
  uint64_t now_;
  bool free_ = true;
};

}  // namespace uroce::sim
