// SPDX-License-Identifier: BSD-3-Clause
// The transport's handle on a region's private state: key assignment and
// the count of posted work that references it (which makes dereg_mr fail
// with EBUSY rather than pull memory from under a WQE).
#pragma once

#include "uroce/verbs/memory_region.h"

namespace uroce {

struct MrAccess {
  static void set_key(MemoryRegion& mr, uint32_t key) { mr.key_ = key; }
  static void acquire(MemoryRegion& mr) { ++mr.use_count_; }
  static void release(MemoryRegion& mr) {
    if (mr.use_count_ > 0) --mr.use_count_;
  }
  static bool owned(const MemoryRegion& mr) { return mr.owned_; }
  static void*& tx_shinfo(MemoryRegion& mr) { return mr.tx_shinfo_; }
};

}  // namespace uroce
