// SPDX-License-Identifier: BSD-3-Clause
// A registered memory region: a byte range, its access rights and its key.
// lkey == rkey (as in rxe); the key's upper 16 bits are random, so a remote
// peer cannot guess a valid key from another one.
#pragma once

#include "uroce/api.h"

#include <cstddef>
#include <cstdint>
#include <memory>

namespace uroce {

class ProtectionDomain;
namespace memory {
struct Region;
}
namespace client {
class MemoryRegion;
}
namespace detail {
struct Access;
}

class UROCE_API MemoryRegion {
 public:
  ~MemoryRegion();
  MemoryRegion(const MemoryRegion&) = delete;
  MemoryRegion& operator=(const MemoryRegion&) = delete;

  void* addr() const { return addr_; }
  // The address work requests and peers name the first byte by: addr()
  // unless registered with ProtectionDomain::reg_mr_iova.
  uint64_t iova() const { return iova_; }
  size_t length() const { return length_; }
  uint32_t lkey() const { return key_; }
  uint32_t rkey() const { return key_; }
  int access() const { return access_; }
  ProtectionDomain& pd() const { return *pd_; }
  // Posted work requests that reference this region and are not complete.
  uint32_t in_use() const;
  // In DPDK memory (alloc_mr, or rte_malloc'd memory given to reg_mr): a
  // NIC can DMA from it, so it can be sent from without a copy.
  bool dpdk_memory() const { return dpdk_memory_; }

  // True if [iova, iova+len) lies inside the region (no overflow).
  bool contains(uint64_t iova, uint64_t len) const {
    return iova >= iova_ && len <= length_ && iova - iova_ <= length_ - len;
  }

 private:
  friend class ProtectionDomain;
  friend struct detail::Access;
  MemoryRegion(ProtectionDomain* pd, void* addr, size_t length, int access);

  // What the accessors above return, fixed once registered, kept here so
  // that reading a key in an application's posting loop costs no call.
  ProtectionDomain* pd_;
  uint8_t* addr_;
  size_t length_;
  int access_;
  uint32_t key_ = 0;
  bool dpdk_memory_ = false;
  bool owned_ = false;  // allocated by alloc_mr: freed with the region
  // The data path's record of it (key table, use count, zero-copy frames).
  std::unique_ptr<memory::Region> region_;
  std::unique_ptr<client::MemoryRegion> remote_;  // a client of uroced
  uint64_t iova_ = 0;
};

}  // namespace uroce
