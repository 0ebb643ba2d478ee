// SPDX-License-Identifier: BSD-3-Clause
// Protection domain: the scope in which memory regions, QPs, SRQs and
// address handles may be used together. A remote access through a QP
// succeeds only with a key of a region in the QP's own PD.
#pragma once

#include "uroce/api.h"

#include <cstddef>
#include <cstdint>
#include <memory>

#include "uroce/verbs/types.h"

namespace uroce {

class Device;
class MemoryRegion;
class MemoryWindow;
class QueuePair;
class SharedReceiveQueue;
class AddressHandle;
namespace client {
class ProtectionDomain;
class MemoryRegion;
}
namespace detail {
struct Access;
}
namespace wire {
struct IpAddr;
}

class UROCE_API ProtectionDomain {
 public:
  ~ProtectionDomain();
  ProtectionDomain(const ProtectionDomain&) = delete;
  ProtectionDomain& operator=(const ProtectionDomain&) = delete;

  // Registers memory the application already owns (ibv_reg_mr). access is
  // a mask of ibv_access_flags. nullptr and err set (EINVAL, ENOMEM) on failure.
  std::unique_ptr<MemoryRegion> reg_mr(void* addr, size_t length, int access, int& err);
  // ibv_reg_mr_iova2: the bytes at addr, named by iova in work requests
  // and by peers. reg_mr is this with iova = addr. EINVAL when iova +
  // length wraps.
  std::unique_ptr<MemoryRegion> reg_mr_iova(void* addr, size_t length, uint64_t iova, int access, int& err);
  // Allocates zeroed DPDK memory (hugepages, or the --no-huge heap) and
  // registers it; the region frees it.
  std::unique_ptr<MemoryRegion> alloc_mr(size_t length, int access, int& err);
  // ibv_dereg_mr: EBUSY (and mr left as it is) while posted work uses it,
  // EINVAL while memory windows are bound to it (as rxe).
  int dereg_mr(std::unique_ptr<MemoryRegion>& mr);

  // ibv_alloc_mw: an unbound window of IBV_MW_TYPE_1 or IBV_MW_TYPE_2.
  // nullptr and err set (EINVAL for another type, ENOMEM when max_mw
  // windows are alive).
  std::unique_ptr<MemoryWindow> alloc_mw(ibv_mw_type type, int& err);
  // ibv_dealloc_mw: a bound window is unbound first; its rkey fails every
  // later access. EINVAL for a window of another PD.
  int dealloc_mw(std::unique_ptr<MemoryWindow>& mw);

  // Whether objects made in this PD (QPs, SRQs, regions, windows, address
  // handles) are still alive: destroying it then is a programming error
  // (the C ABI's ibv_dealloc_pd answers EBUSY instead).
  bool in_use() const { return children_ != 0; }

  std::unique_ptr<QueuePair> create_qp(const QpInitAttr& attr, int& err);
  std::unique_ptr<SharedReceiveQueue> create_srq(const SrqInitAttr& attr, int& err);
  std::unique_ptr<AddressHandle> create_ah(const ibv_ah_attr& attr, int& err);

  Device& device() const { return *device_; }
  uint32_t handle() const { return handle_; }

 private:
  friend struct detail::Access;
  friend class Device;
  friend class MemoryRegion;
  friend class MemoryWindow;
  friend class QueuePair;
  friend class SharedReceiveQueue;
  friend class AddressHandle;

  // create_qp with the QPN given (the CM's QP1), or allocated when 0.
  std::unique_ptr<QueuePair> create_qp_numbered(const QpInitAttr& attr, uint32_t qpn, int& err);
  ProtectionDomain(Device* device, uint32_t handle);
  std::unique_ptr<MemoryRegion> remote_region(std::unique_ptr<client::MemoryRegion> rmr, int access);
  std::unique_ptr<MemoryWindow> remote_mw(ibv_mw_type type, int& err);
  std::unique_ptr<AddressHandle> remote_ah(const ibv_ah_attr& attr, const wire::IpAddr& dgid, const wire::IpAddr& sgid,
                                           int& err);

  Device* device_;
  uint32_t handle_;
  uint32_t children_ = 0;  // objects created in this PD and still alive
  std::unique_ptr<client::ProtectionDomain> remote_;  // a client of uroced
};

}  // namespace uroce
