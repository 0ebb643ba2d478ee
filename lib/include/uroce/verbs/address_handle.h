// SPDX-License-Identifier: BSD-3-Clause
// Address handle: where a UD send goes (ibv_create_ah). The destination
// MAC is resolved when the handle is created, from the device's neighbour
// table, so the send path never looks it up.
#pragma once

#include "uroce/api.h"

#include <infiniband/verbs.h>

#include "uroce/wire/eth.h"
#include "uroce/wire/ip_addr.h"

namespace uroce {

class ProtectionDomain;

class UROCE_API AddressHandle {
 public:
  ~AddressHandle();
  AddressHandle(const AddressHandle&) = delete;
  AddressHandle& operator=(const AddressHandle&) = delete;

  const ibv_ah_attr& attr() const { return attr_; }
  const wire::IpAddr& dgid() const { return dgid_; }
  // The device's GID at attr().grh.sgid_index: the datagrams' source.
  const wire::IpAddr& sgid() const { return sgid_; }
  const wire::MacAddr& dmac() const { return dmac_; }
  ProtectionDomain& pd() const { return *pd_; }
  // On a daemon's device: the daemon's name for it, which a UD send slot
  // carries; 0 in-process.
  uint32_t remote_handle() const { return remote_handle_; }

 private:
  friend class ProtectionDomain;
  AddressHandle(ProtectionDomain* pd, const ibv_ah_attr& attr, const wire::IpAddr& dgid, const wire::IpAddr& sgid,
                const wire::MacAddr& dmac)
      : pd_(pd), attr_(attr), dgid_(dgid), sgid_(sgid), dmac_(dmac) {}

  ProtectionDomain* pd_;
  ibv_ah_attr attr_;
  wire::IpAddr dgid_;
  wire::IpAddr sgid_;
  wire::MacAddr dmac_;
  uint32_t remote_handle_ = 0;
};

}  // namespace uroce
