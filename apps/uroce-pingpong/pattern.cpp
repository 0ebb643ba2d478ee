// SPDX-License-Identifier: BSD-3-Clause
#include "pattern.h"

#include <cstdio>

namespace uroce::pingpong {
namespace {

// Consecutive iterations differ by 7 (odd, so never 0 mod 256) in every
// byte; within a message the step 31 plus a jump every 256 bytes keeps
// neighbouring bytes and neighbouring 256-byte blocks apart.
inline uint8_t pattern_byte(size_t j, uint32_t iter) {
  return uint8_t(j * 31 + (j >> 8) * 13 + iter * 7 + 1);
}

}  // namespace

void fill_pattern(uint8_t* p, size_t n, uint32_t iter) {
  for (size_t j = 0; j < n; ++j) p[j] = pattern_byte(j, iter);
}

bool check_pattern(const uint8_t* p, size_t n, uint32_t iter, std::string& error) {
  for (size_t j = 0; j < n; ++j) {
    if (p[j] != pattern_byte(j, iter)) {
      char buf[160];
      std::snprintf(buf, sizeof buf, "message %u: byte %zu of %zu is 0x%02x, expected 0x%02x", iter, j, n, p[j],
                    pattern_byte(j, iter));
      error = buf;
      return false;
    }
  }
  return true;
}

}  // namespace uroce::pingpong
