// SPDX-License-Identifier: BSD-3-Clause
#include "mr_table.h"

namespace uroce::memory {

MrTable::MrTable(uint64_t seed, uint32_t max_mr) : slots_(65536, nullptr), rng_(seed) {
  // Slot 0 is never used, so key 0 is never valid.
  for (uint32_t s = std::min<uint32_t>(max_mr, 65535); s >= 1; --s) free_.push_back(s);
}

uint32_t MrTable::insert(Region* mr) {
  if (free_.empty()) return 0;
  const uint32_t slot = free_.back();
  free_.pop_back();
  uint32_t high = 0;
  while (high == 0) high = uint32_t(rng_()) & 0xFFFF0000u;
  slots_[slot] = mr;
  return high | slot;
}

void MrTable::remove(uint32_t key) {
  const uint32_t slot = key & 0xFFFF;
  if (slot == 0 || slots_[slot] == nullptr || slots_[slot]->key != key) return;
  slots_[slot] = nullptr;
  free_.push_back(slot);
}

}  // namespace uroce::memory
