// SPDX-License-Identifier: BSD-3-Clause
// RFC 1071's last step, shared by the checksum code, the frame builder and
// the header template: a 32-bit sum of 16-bit words, folded to 16 bits
// (twice is enough for any 32-bit sum) and inverted.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace uroce::wire::detail {

// RFC 1071's sum is independent of byte order (section 2B): 16-bit words
// added as they lie in memory give the byte-swapped sum, so a long run is
// summed 32 bits at a time with native loads and swapped once at the end.
// An odd last byte counts as the first byte of a zero-padded word.
inline uint64_t sum_native(uint64_t acc, const uint8_t* p, size_t len) {
  // Four independent 32-bit lanes, which the compiler can keep in vector
  // registers: no carry chain between them.
  uint64_t lane[4] = {acc, 0, 0, 0};
  for (; len >= 16; p += 16, len -= 16) {
    uint32_t w[4];
    std::memcpy(w, p, 16);
    for (int i = 0; i < 4; ++i) lane[i] += w[i];
  }
  acc = lane[0] + lane[1] + lane[2] + lane[3];
  for (; len >= 8; p += 8, len -= 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    acc += (w & 0xFFFFFFFF) + (w >> 32);
  }
  for (; len >= 2; p += 2, len -= 2) {
    uint16_t w;
    std::memcpy(&w, p, 2);
    acc += w;
  }
  if (len) {
    uint16_t w = 0;
    std::memcpy(&w, p, 1);
    acc += w;
  }
  return acc;
}

// A native-order sum folded to 16 bits (not inverted), still in memory order.
inline uint16_t fold_native(uint64_t acc) {
  acc = (acc & 0xFFFFFFFF) + (acc >> 32);
  acc = (acc & 0xFFFFFFFF) + (acc >> 32);
  acc = (acc & 0xFFFF) + (acc >> 16);
  acc = (acc & 0xFFFF) + (acc >> 16);
  return uint16_t(acc);
}

inline uint16_t fold_complement(uint32_t sum) {
  sum = (sum & 0xFFFF) + (sum >> 16);
  sum = (sum & 0xFFFF) + (sum >> 16);
  return uint16_t(~sum);
}

}  // namespace uroce::wire::detail
