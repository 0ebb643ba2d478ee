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
  return mr->at(va);
}

uint8_t* resolve_remote(const MrTable& mrs, const ProtectionDomain* pd, uint32_t qpn, uint32_t key, uint64_t va,
                        uint64_t len, int needed_access, AccessError& err) {
  if (len == 0 || !is_window_key(key)) return resolve(mrs, pd, key, va, len, needed_access, err);
  const Window* mw = mrs.find_window(key);
  if (mw == nullptr || mw->mr == nullptr) {
    err = AccessError::bad_key;
    return nullptr;
  }
  if (mw->pd != pd || (mw->type == IBV_MW_TYPE_2 && mw->qpn != qpn)) {
    err = AccessError::pd_mismatch;
    return nullptr;
  }
  if ((mw->access & needed_access) != needed_access) {
    err = AccessError::no_permission;
    return nullptr;
  }
  // The window's own range, which the bind kept inside its live region.
  if (!mw->contains(va, len)) {
    err = AccessError::out_of_bounds;
    return nullptr;
  }
  err = AccessError::ok;
  return mw->mr->at(va);
}

bool can_invalidate(const MrTable& mrs, const ProtectionDomain* pd, uint32_t key) {
  const Window* mw = mrs.find_window(key);
  return mw != nullptr && mw->type == IBV_MW_TYPE_2 && mw->mr != nullptr && mw->pd == pd;
}

bool invalidate(MrTable& mrs, const ProtectionDomain* pd, uint32_t key) {
  if (!can_invalidate(mrs, pd, key)) return false;
  unbind(*mrs.find_window(key));
  return true;
}

namespace {

// Local write and MW bind mean nothing for a window but are accepted, as
// rxe does (programs pass their region's flags); zero-based windows are not
// supported.
constexpr int kWindowAccess = IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC |
                              IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND;

bool region_allows(const Region& mr, const Window& mw, const BindRequest& req) {
  if (mr.pd != mw.pd || !(mr.access & IBV_ACCESS_MW_BIND)) return false;
  if ((req.access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) && !(mr.access & IBV_ACCESS_LOCAL_WRITE))
    return false;
  return mr.contains(req.addr, req.length);
}

}  // namespace

bool bind_window(MrTable& mrs, const ProtectionDomain* qp_pd, uint32_t qpn, const BindRequest& req) {
  Window* mw = mrs.find_window_slot(req.key);
  if (mw == nullptr || mw->pd != qp_pd || (req.access & ~kWindowAccess)) return false;
  if (mw->type == IBV_MW_TYPE_2 && (mw->mr != nullptr || req.length == 0)) return false;
  Region* mr = nullptr;
  if (req.length != 0) {
    mr = mrs.find(req.mr_key);
    if (mr == nullptr || !region_allows(*mr, *mw, req)) return false;
  }
  unbind(*mw);
  mw->key = (mw->key & ~0xFFu) | (req.key & 0xFFu);
  if (mr == nullptr) return true;
  mw->mr = mr;
  ++mr->windows;
  mw->access = req.access;
  mw->addr = req.addr;
  mw->length = req.length;
  if (mw->type == IBV_MW_TYPE_2) mw->qpn = qpn;
  return true;
}

}  // namespace uroce::memory
