// SPDX-License-Identifier: BSD-3-Clause
// The checks every memory access passes before a byte is touched: the key
// names a live region, of the same protection domain, with the needed
// access right, and the whole range lies inside it.
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>

#include "mr_table.h"

namespace uroce::memory {

enum class AccessError : uint8_t { ok, bad_key, pd_mismatch, no_permission, out_of_bounds };

// Resolves [va, va+len) through `key`; returns the host pointer, or nullptr
// with `err` set. A zero-length access needs no key (verbs allows any).
uint8_t* resolve(const MrTable& mrs, const ProtectionDomain* pd, uint32_t key, uint64_t va, uint64_t len,
                 int needed_access, AccessError& err);

// Whether a SEND with invalidate may name `rkey`: only a memory window or
// a fast-registered region can be invalidated by the peer (as on rxe); a
// region from reg_mr, or an unknown key, is an invalid request.
bool remote_invalidatable(const MrTable& mrs, uint32_t rkey);

}  // namespace uroce::memory
