// SPDX-License-Identifier: BSD-3-Clause
// A memory window (ibv_mw): a range of a memory region, with its own rkey
// and remote access rights, that a peer uses in place of the region's
// rkey. ProtectionDomain::alloc_mw makes one, unbound.
//
// Type 1 (IBV_MW_TYPE_1): bound with QueuePair::bind_mw, which gives it a
// new rkey each time; any QP of the PD may then be accessed through it.
// Type 2 (IBV_MW_TYPE_2, as 2B): bound by an IBV_WR_BIND_MW work request
// that names the new rkey (only its low 8 bits are the consumer's); only
// the QP that bound it accepts accesses through it, and a SEND with
// invalidate from the peer, or an IBV_WR_LOCAL_INV, unbinds it.
#pragma once

#include "uroce/api.h"

#include <infiniband/verbs.h>

#include <cstdint>
#include <memory>

namespace uroce {

class ProtectionDomain;
namespace memory {
struct Window;
}
namespace detail {
struct Access;
}

class UROCE_API MemoryWindow {
 public:
  ~MemoryWindow();
  MemoryWindow(const MemoryWindow&) = delete;
  MemoryWindow& operator=(const MemoryWindow&) = delete;

  ibv_mw_type type() const { return type_; }
  // Type 1: the rkey of the last bind posted with QueuePair::bind_mw (the
  // key allocated until then). Type 2: the key allocated; as with
  // libibverbs' ibv_mw, a bind posted with IBV_WR_BIND_MW does not change
  // it: the key is the one that work request named, valid once it
  // completes and until the window is invalidated.
  uint32_t rkey() const { return rkey_; }
  // The rkey's upper 24 bits, fixed for the window's life: which window a
  // key names; the low 8 bits are the consumer's.
  uint32_t handle() const { return handle_; }
  ProtectionDomain& pd() const { return *pd_; }

 private:
  friend class ProtectionDomain;
  friend class QueuePair;
  friend struct detail::Access;
  MemoryWindow(ProtectionDomain* pd, ibv_mw_type type);

  ProtectionDomain* pd_;
  ibv_mw_type type_;
  uint32_t rkey_ = 0;
  uint32_t handle_ = 0;
  std::unique_ptr<memory::Window> window_;  // nullptr: uroced's
  uint32_t remote_handle_ = 0;              // uroced's name for it
};

}  // namespace uroce
