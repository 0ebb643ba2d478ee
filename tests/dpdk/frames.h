// SPDX-License-Identifier: BSD-3-Clause
// Test frames for raw port tests: an Ethernet header between two MACs, an
// experimental EtherType, and a payload derived from (seed, index), so a
// receiver can check order and every byte.
#pragma once

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "uroce/wire/eth.h"

namespace uroce::test {

inline constexpr uint16_t kTestEtherType = 0x88B5;  // IEEE 802 local experimental

inline std::vector<uint8_t> test_frame(const wire::MacAddr& dst, const wire::MacAddr& src, uint64_t seed,
                                       uint32_t index, size_t len) {
  std::vector<uint8_t> f(len);
  std::memcpy(f.data(), dst.bytes.data(), 6);
  std::memcpy(f.data() + 6, src.bytes.data(), 6);
  f[12] = kTestEtherType >> 8;
  f[13] = kTestEtherType & 0xFF;
  std::mt19937_64 rng(seed * 1'000'003 + index);
  for (size_t i = 14; i < len; ++i) f[i] = uint8_t(rng());
  if (len >= 18) std::memcpy(f.data() + 14, &index, 4);
  return f;
}

// A frame length between 60 and max_len from (seed, index).
inline size_t test_frame_len(uint64_t seed, uint32_t index, size_t max_len) {
  std::mt19937_64 rng(seed ^ (uint64_t(index) << 20));
  return 60 + size_t(rng() % (max_len - 60 + 1));
}

}  // namespace uroce::test
