// SPDX-License-Identifier: BSD-3-Clause
#include "sge_copy.h"

#include <algorithm>
#include <cstring>

namespace uroce::memory {
namespace {

// Calls fn(host_ptr, n, done) over the SGE pieces covering [off, off+len).
template <class Fn>
bool walk(const MrTable& mrs, const ProtectionDomain* pd, const SgeList& sgl, uint64_t off,
          uint32_t len, int access, Fn&& fn) {
  uint32_t done = 0;
  for (int i = 0; i < sgl.num && done < len; ++i) {
    const ibv_sge& s = sgl.sge[i];
    if (off >= s.length) {
      off -= s.length;
      continue;
    }
    const uint32_t n = uint32_t(std::min<uint64_t>(s.length - off, len - done));
    AccessError err;
    uint8_t* p = resolve(mrs, pd, s.lkey, s.addr + off, n, access, err);
    if (p == nullptr) return false;
    fn(p, n, done);
    done += n;
    off = 0;
  }
  return done == len;
}

}  // namespace

bool gather(const MrTable& mrs, const ProtectionDomain* pd, const SgeList& sgl, uint64_t off,
            uint8_t* dst, uint32_t len) {
  return walk(mrs, pd, sgl, off, len, 0,
              [&](const uint8_t* p, uint32_t n, uint32_t done) { std::memcpy(dst + done, p, n); });
}

Region* locate(const MrTable& mrs, const ProtectionDomain* pd, const SgeList& sgl, uint64_t off,
                     uint32_t len, uint8_t*& p) {
  for (int i = 0; i < sgl.num; ++i) {
    const ibv_sge& s = sgl.sge[i];
    if (off >= s.length) {
      off -= s.length;
      continue;
    }
    if (s.length - off < len) return nullptr;  // spans SGEs: the caller copies
    AccessError err;
    p = resolve(mrs, pd, s.lkey, s.addr + off, len, 0, err);
    return p ? mrs.find(s.lkey) : nullptr;
  }
  return nullptr;
}

bool scatter(const MrTable& mrs, const ProtectionDomain* pd, const SgeList& sgl, uint64_t off,
             const uint8_t* src, uint32_t len) {
  return walk(mrs, pd, sgl, off, len, IBV_ACCESS_LOCAL_WRITE,
              [&](uint8_t* p, uint32_t n, uint32_t done) { std::memcpy(p, src + done, n); });
}

}  // namespace uroce::memory
