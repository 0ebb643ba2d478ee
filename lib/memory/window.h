// SPDX-License-Identifier: BSD-3-Clause
// A memory window as the data path knows it: a range of a region, with its
// own rkey and remote access rights, that a peer may use in place of the
// region's key (IBA 10.6.7). The public MemoryWindow is a handle that owns
// one; the key table maps its rkey to it.
//
// Type 1 windows are bound by the bind verb (QueuePair::bind_mw) and stay
// until bound again or freed. Type 2 windows (uroce implements 2B) are
// bound by a BIND_MW work request to the QP that posted it, and only
// through that QP can a peer use them; a SEND with invalidate, or a local
// invalidate, unbinds them again.
#pragma once

#include <cstdint>

#include "region.h"

namespace uroce::memory {

struct Window {
  const ProtectionDomain* pd = nullptr;  // compared, never followed
  uint8_t type = 1;                      // ibv_mw_type: 1 or 2
  uint32_t key = 0;                      // the rkey; its low 8 bits are the consumer's
  // The region the window is bound to: null while unbound (a type 1
  // window bound with length 0, a type 2 window not yet bound or
  // invalidated). Region::windows counts the windows bound to it.
  Region* mr = nullptr;
  uint32_t qpn = 0;  // type 2: the QP it was bound through
  int access = 0;    // remote ibv_access_flags
  uint64_t addr = 0;
  uint64_t length = 0;

  bool contains(uint64_t a, uint64_t len) const {
    return a >= addr && len <= length && a - addr <= length - len;
  }
};

}  // namespace uroce::memory
