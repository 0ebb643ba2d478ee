// SPDX-License-Identifier: BSD-3-Clause
#include <cstdio>

#include "runner.h"

namespace uroce::perf {

void fill_pattern(uint8_t* p, uint64_t n, uint32_t seed) {
  for (uint64_t i = 0; i < n; ++i) p[i] = uint8_t((i * 2654435761u + seed) >> 7);
}

bool check_pattern(const uint8_t* p, uint64_t n, uint32_t seed, std::string& error) {
  for (uint64_t i = 0; i < n; ++i) {
    const uint8_t want = uint8_t((i * 2654435761u + seed) >> 7);
    if (p[i] != want) {
      char buf[128];
      std::snprintf(buf, sizeof buf, "data mismatch at byte %llu: got 0x%02x, expected 0x%02x",
                    (unsigned long long)i, p[i], want);
      error = buf;
      return false;
    }
  }
  return true;
}

}  // namespace uroce::perf
