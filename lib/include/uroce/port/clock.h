// SPDX-License-Identifier: BSD-3-Clause
// Time source of an engine: the TSC on a real port, virtual time on the
// simulated wire (so millisecond retransmission timers run instantly and
// every run is reproducible). Read once per poll, not per packet.
#pragma once

#include "uroce/api.h"

#include <cstdint>

namespace uroce {

class UROCE_API Clock {
 public:
  virtual ~Clock() = default;
  virtual uint64_t now_ns() const = 0;
  // Reading costs nothing worth saving (virtual time): the engine then
  // reads it on every poll, and skips no idle work (engine.cpp poll).
  virtual bool free_to_read() const { return false; }
};

inline constexpr uint64_t kNever = UINT64_MAX;

}  // namespace uroce
