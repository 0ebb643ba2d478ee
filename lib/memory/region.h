// SPDX-License-Identifier: BSD-3-Clause
// A registered region as the data path knows it: the key table maps a key
// to one of these, and every access check, scatter/gather copy and
// zero-copy segment works on it. The public MemoryRegion is a handle that
// owns one; nothing below the verbs layer sees the public object.
#pragma once

#include <cstddef>
#include <cstdint>

namespace uroce {
class ProtectionDomain;
}

namespace uroce::memory {

struct Region {
  const ProtectionDomain* pd = nullptr;  // compared with a QP's, never followed
  uint8_t* addr = nullptr;  // where the bytes are in this process
  // The address work requests and peers name the first byte by: addr,
  // unless registered under another (uroced maps a client's pages
  // wherever it has room and keeps the client's addresses).
  uint64_t iova = 0;
  size_t length = 0;
  int access = 0;           // ibv_access_flags
  uint32_t key = 0;         // lkey == rkey
  // Posted work requests that reference the region and are not complete:
  // dereg_mr answers EBUSY while there are any.
  uint32_t use_count = 0;
  bool dpdk_memory = false;  // a NIC can DMA from it (zero-copy TX)
  // Memory windows bound to the region: it may not be deregistered while
  // there are any (ibv_dereg_mr answers EINVAL, as rxe does).
  uint32_t windows = 0;
  // Zero-copy TX: the reference count shared by the frames whose payload
  // segments point into this region (tx_extbuf.h).
  void* tx_shinfo = nullptr;

  // True if [a, a+len), in IOVA terms, lies inside the region (no overflow).
  bool contains(uint64_t a, uint64_t len) const { return a >= iova && len <= length && a - iova <= length - len; }
  // The byte named by IOVA a, which contains() accepted.
  uint8_t* at(uint64_t a) const { return addr + (a - iova); }
};

inline void acquire(Region& r) { ++r.use_count; }
inline void release(Region& r) {
  if (r.use_count > 0) --r.use_count;
}

}  // namespace uroce::memory
