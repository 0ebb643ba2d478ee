// SPDX-License-Identifier: BSD-3-Clause
#include "access.h"

namespace uroce::memory {

uint8_t* resolve(const MrTable& mrs, const ProtectionDomain* pd, uint32_t key, uint64_t va, uint64_t len,
                 int needed_access, AccessError& err) {
  err = AccessError::ok;
  // IBA C9-88: a zero-length access needs neither a valid key nor address.
  // Callers test the result for null, so give them one they never touch.
  static uint8_t nothing;
  if (len == 0) return &nothing;
  Region* mr = mrs.find(key);
  if (mr == nullptr) {
    err = AccessError::bad_key;
    return nullptr;
  }
  if (mr->pd != pd) {
    err = AccessError::pd_mismatch;
    return nullptr;
  }
  if ((mr->access & needed_access) != needed_access) {
    err = AccessError::no_permission;
    return nullptr;
  }
  if (!mr->contains(va, len)) {
    err = AccessError::out_of_bounds;
    return nullptr;
  }
  return reinterpret_cast<uint8_t*>(uintptr_t(va));
}

bool remote_invalidatable(const MrTable& mrs, uint32_t rkey) {
  const Region* mr = mrs.find(rkey);
  return mr != nullptr && mr->remote_invalidatable;
}

}  // namespace uroce::memory
