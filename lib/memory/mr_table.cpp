// SPDX-License-Identifier: BSD-3-Clause
#include "mr_table.h"

namespace uroce::memory {

MrTable::MrTable(uint64_t seed, uint32_t max_mr, uint32_t max_mw)
    : slots_(65536, nullptr), window_slots_(65536, nullptr), rng_(seed) {
  // Slot 0 is never used, so key 0 is never valid.
  for (uint32_t s = std::min<uint32_t>(max_mr, 65535); s >= 1; --s) free_.push_back(s);
  for (uint32_t s = std::min<uint32_t>(max_mw, 65535); s >= 1; --s) window_free_.push_back(s);
  window_capacity_ = window_free_.size();
}

uint32_t MrTable::insert(Region* mr) {
  if (free_.empty()) return 0;
  const uint32_t slot = free_.back();
  free_.pop_back();
  uint32_t high = 0;
  while (high == 0) high = uint32_t(rng_()) & 0x7FFF0000u;
  slots_[slot] = mr;
  return high | slot;
}

void MrTable::remove(uint32_t key) {
  const uint32_t slot = key & 0xFFFF;
  if (is_window_key(key) || slot == 0 || slots_[slot] == nullptr || slots_[slot]->key != key) return;
  slots_[slot] = nullptr;
  free_.push_back(slot);
}

uint32_t MrTable::insert_window(Window* mw) {
  if (window_free_.empty()) return 0;
  const uint32_t slot = window_free_.back();
  window_free_.pop_back();
  const uint32_t r = uint32_t(rng_());
  window_slots_[slot] = mw;
  if (slot > window_high_) window_high_ = slot;
  return 0x80000000u | (r & 0x7F000000u) | (slot << 8) | (r & 0xFFu);
}

void MrTable::remove_window(Window* mw) {
  const uint32_t slot = (mw->key >> 8) & 0xFFFF;
  if (!is_window_key(mw->key) || slot == 0 || window_slots_[slot] != mw) return;
  window_slots_[slot] = nullptr;
  window_free_.push_back(slot);
}

void MrTable::unbind_windows_of(const Region* mr) {
  if (mr->windows == 0) return;  // the usual case: no scan
  for (uint32_t s = 1; s <= window_high_; ++s)
    if (Window* mw = window_slots_[s]; mw != nullptr && mw->mr == mr) unbind(*mw);
}

void MrTable::unbind_windows_of_qp(const ProtectionDomain* pd, uint32_t qpn) {
  if (window_free_.size() == window_capacity_) return;  // no window alive
  for (uint32_t s = 1; s <= window_high_; ++s)
    if (Window* mw = window_slots_[s];
        mw != nullptr && mw->type == 2 && mw->mr != nullptr && mw->pd == pd && mw->qpn == qpn)
      unbind(*mw);
}

void unbind(Window& mw) {
  if (mw.mr != nullptr && mw.mr->windows > 0) --mw.mr->windows;
  mw.mr = nullptr;
  mw.qpn = 0;
  mw.access = 0;
  mw.addr = 0;
  mw.length = 0;
}

}  // namespace uroce::memory
