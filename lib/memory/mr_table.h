// SPDX-License-Identifier: BSD-3-Clause
// Key -> memory region and key -> memory window lookup for the data path.
//
// A region's key is (random 15 bits << 16) | slot, with bit 31 clear. A
// window's rkey has bit 31 set, 7 random bits, its slot in bits 8..23 and
// the consumer's 8-bit key in bits 0..7 (a bind may change those, as
// verbs lets it). Lookup is one array index and one compare; a key whose
// random part does not match is rejected exactly like an unknown one, so
// keys cannot be guessed by counting.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "region.h"
#include "window.h"

namespace uroce::memory {

inline bool is_window_key(uint32_t key) { return (key & 0x80000000u) != 0; }

class MrTable {
 public:
  explicit MrTable(uint64_t seed, uint32_t max_mr = 65535, uint32_t max_mw = 65535);

  // Returns the new key, or 0 if the table is full.
  uint32_t insert(Region* mr);
  void remove(uint32_t key);

  Region* find(uint32_t key) const {
    if (is_window_key(key)) return nullptr;
    Region* mr = slots_[key & 0xFFFF];
    return mr != nullptr && mr->key == key ? mr : nullptr;
  }

  // Windows: insert_window returns the window's first rkey (0: full).
  uint32_t insert_window(Window* mw);
  void remove_window(Window* mw);
  // The window `key` names, whatever its consumer key (the low 8 bits).
  Window* find_window_slot(uint32_t key) const {
    if (!is_window_key(key)) return nullptr;
    Window* mw = window_slots_[(key >> 8) & 0xFFFF];
    return mw != nullptr && (mw->key ^ key) < 0x100 ? mw : nullptr;
  }
  // The window whose current rkey is exactly `key`.
  Window* find_window(uint32_t key) const {
    Window* mw = find_window_slot(key);
    return mw != nullptr && mw->key == key ? mw : nullptr;
  }
  // A region goes away: the windows still bound to it are unbound.
  void unbind_windows_of(const Region* mr);
  // A QP goes away: the type 2 windows bound through it are unbound (its
  // QPN may be handed out again; rxe keeps the QP alive instead).
  void unbind_windows_of_qp(const ProtectionDomain* pd, uint32_t qpn);

 private:
  std::vector<Region*> slots_;
  std::vector<uint32_t> free_;
  std::vector<Window*> window_slots_;
  std::vector<uint32_t> window_free_;
  size_t window_capacity_ = 0;
  // The highest window slot ever handed out. A freed slot is handed out
  // again before any never used, so this is the most windows alive at
  // once: the scans (one per QP destroyed while any window lives) stop
  // there instead of going through all 65536 slots.
  uint32_t window_high_ = 0;
  std::mt19937_64 rng_;
};

// Unbinds a window from its region (no-op when unbound).
void unbind(Window& mw);

}  // namespace uroce::memory
