// SPDX-License-Identifier: BSD-3-Clause
// The settings of a Device (Device::open): its port and clock, GID table,
// pools, transport tuning, limits and congestion control.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "uroce/cc/dcqcn.h"
#include "uroce/port/clock.h"
#include "uroce/port/packet_port.h"
#include "uroce/verbs/types.h"
#include "uroce/wire/ip_addr.h"

namespace uroce {

struct DeviceConfig {
  // Non-empty: the device is a client of the uroced listening on this Unix
  // socket (docs/daemon.md); port, clock, gids and the tuning below are the
  // daemon's, and this process needs no EAL.
  std::string daemon_socket{};
  std::string name = "uroce0";
  PacketPort* port = nullptr;  // not owned; must outlive the device
  Clock* clock = nullptr;      // not owned
  // GID table: RoCEv2 GIDs are IPv6 addresses or ::ffff:a.b.c.d.
  std::vector<wire::IpAddr> gids;
  // 802.1Q: with a VLAN id (0..4094; 0 tags with a priority only) every
  // frame the device sends carries a tag of that id and of priority
  // vlan_pcp (0..7; a connected QP's or address handle's non-zero service
  // level takes its place, as on a NIC), and only frames of that VLAN are
  // the device's. -1: untagged frames, and only untagged or priority-tagged
  // ones are the device's.
  int vlan_id = -1;
  uint8_t vlan_pcp = 0;
  uint32_t mbufs = 8191;  // TX pool size
  // Key randomness; 0 takes a seed from std::random_device. Tests fix it.
  uint64_t seed = 0;
  // Transport tuning (rxe's defaults).
  uint32_t max_unacked_psns = 128;  // requester window
  uint32_t ack_req_every = 64;      // AckReq at least every N packets
  // Zero-copy TX: payloads of at least this many bytes go out as a segment
  // pointing into the registered region, where the port takes chained
  // mbufs (PacketPort::tx_chains; on a NIC only from DPDK memory); 0
  // always copies.
  uint32_t zero_copy_min = 1024;
  // ARP/ND: a request every retry_ms until a reply or timeout_ms.
  uint32_t neighbor_retry_ms = 200;
  uint32_t neighbor_timeout_ms = 3000;
  // Threaded mode: after 200 us without work the engine thread naps,
  // 20 us first, doubling up to this, so an idle device stops using a
  // core. A frame that arrives during a nap is seen at its end (there is no
  // Rx interrupt); posts and control calls wake it at once. 0: never nap
  // (the thread spins, yielding the CPU). docs/engine.md.
  uint32_t idle_sleep_max_us = 1000;
  DeviceLimits limits{};
  // Congestion control of every QP unless its QpInitAttr::cc overrides it
  // (docs/dcqcn.md). Data packets carry cc.dcqcn.data_ecn even with none.
  cc::CcConfig cc{};
};

// vlan_id and vlan_pcp from a VLAN id and a PCP as a user gives them (-1:
// not given): a PCP alone tags frames with VLAN id 0 (priority tagging).
inline void set_vlan(DeviceConfig& config, int vlan, int pcp) {
  config.vlan_id = vlan >= 0 ? vlan : pcp >= 0 ? 0 : -1;
  config.vlan_pcp = uint8_t(pcp < 0 ? 0 : pcp);
}

}  // namespace uroce
