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

// The responder's form: `key` is an rkey, which may name a memory window
// (checked first: bound, its PD, for type 2 the QP it was bound through,
// its access and its own bounds) or a region.
uint8_t* resolve_remote(const MrTable& mrs, const ProtectionDomain* pd, uint32_t qpn, uint32_t key, uint64_t va,
                        uint64_t len, int needed_access, AccessError& err);

// SEND with invalidate (remote) and LOCAL_INV (local) on a QP of `pd`:
// only a bound type 2 window of that PD can be invalidated (a region from
// reg_mr never can: uroce has no fast registration). True if `key` named
// one; it is then unbound and the key fails every later access.
bool invalidate(MrTable& mrs, const ProtectionDomain* pd, uint32_t key);
// Whether invalidate would succeed; changes nothing.
bool can_invalidate(const MrTable& mrs, const ProtectionDomain* pd, uint32_t key);

// A bind (type 1 through the bind verb, type 2 through a BIND_MW work
// request) as the requester executes it, in send queue order.
struct BindRequest {
  uint32_t key = 0;     // the window's rkey with the new consumer key in bits 0..7
  uint32_t mr_key = 0;  // the region's lkey; unused when length is 0
  uint64_t addr = 0;
  uint64_t length = 0;  // 0: unbinds a type 1 window
  int access = 0;
};
// The checks of IBA 10.6.7 as rxe makes them: the window exists and its
// PD is the QP's (rxe checks this for type 2 only); a type 2 window is
// unbound and names a range; the region exists, is of the
// window's PD, allows IBV_ACCESS_MW_BIND, has local write if the window
// gives remote write or atomic access, and holds the range. True if bound.
bool bind_window(MrTable& mrs, const ProtectionDomain* qp_pd, uint32_t qpn, const BindRequest& req);

}  // namespace uroce::memory
