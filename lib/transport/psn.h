// SPDX-License-Identifier: BSD-3-Clause
// 24-bit packet sequence numbers, compared modulo 2^24 within a window of
// 2^23 (IBA 9.7.1): a PSN "before" another is at most 2^23 - 1 behind it.
#pragma once

#include <cstdint>

namespace uroce::transport {

inline constexpr uint32_t kPsnMask = 0xFFFFFF;

constexpr uint32_t psn_add(uint32_t psn, uint32_t n) { return (psn + n) & kPsnMask; }

// Signed distance a - b in [-2^23, 2^23).
constexpr int32_t psn_diff(uint32_t a, uint32_t b) {
  return int32_t((a - b) << 8) >> 8;
}

constexpr bool psn_lt(uint32_t a, uint32_t b) { return psn_diff(a, b) < 0; }
constexpr bool psn_le(uint32_t a, uint32_t b) { return psn_diff(a, b) <= 0; }

}  // namespace uroce::transport
