// SPDX-License-Identifier: BSD-3-Clause
// The one random source of a simulated wire. splitmix64: tiny, fast, and
// its output is fixed by the seed alone on every platform, unlike the
// std distributions, whose algorithms are implementation-defined.
#pragma once

#include <cstdint>

namespace uroce::sim {

class FaultRng {
 public:
  explicit FaultRng(uint64_t seed) : state_(seed) {}

  uint64_t next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }

  // Uniform in [0, 1) with 53 random bits.
  double unit() { return double(next() >> 11) * 0x1.0p-53; }

  // True with probability p. p <= 0 draws nothing, so a fault that is off
  // costs nothing and does not shift the stream of the others.
  bool chance(double p) {
    if (p <= 0.0) return false;
    return unit() < p;
  }

  // Uniform in [0, n), n > 0; the modulo bias is below 2^-40 for the
  // frame sizes this picks from.
  uint64_t below(uint64_t n) { return next() % n; }

 private:
  uint64_t state_;
};

}  // namespace uroce::sim
