// SPDX-License-Identifier: BSD-3-Clause
// Key -> memory region lookup for the data path.
//
// A key is (random 16 bits << 16) | slot. Lookup is one array index and
// one compare; a key whose random half does not match is rejected exactly
// like an unknown one, so keys cannot be guessed by counting.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "region.h"

namespace uroce::memory {

class MrTable {
 public:
  explicit MrTable(uint64_t seed, uint32_t max_mr = 65535);

  // Returns the new key, or 0 if the table is full.
  uint32_t insert(Region* mr);
  void remove(uint32_t key);

  Region* find(uint32_t key) const {
    Region* mr = slots_[key & 0xFFFF];
    return mr != nullptr && mr->key == key ? mr : nullptr;
  }

 private:
  std::vector<Region*> slots_;
  std::vector<uint32_t> free_;
  std::mt19937_64 rng_;
};

}  // namespace uroce::memory
