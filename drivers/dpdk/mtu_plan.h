// SPDX-License-Identifier: BSD-3-Clause
// How large the frames of a port may be, and how large its RX mbufs must
// be for them, from what the PMD reports and what is known about the PMDs
// whose report is wrong (see docs/ports.md, "MTU").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

struct rte_eth_dev_info;

namespace uroce::dpdk {

struct MtuPlan {
  uint16_t mtu = 0;         // what the port carries: PacketPort::mtu()
  uint16_t ethdev_mtu = 0;  // what rte_eth_dev_configure / set_mtu get
  bool set_mtu = false;     // whether to call rte_eth_dev_set_mtu(ethdev_mtu)
  uint16_t data_room = 0;   // RX mbuf data room, headroom included
  std::vector<std::string> notices;
};

// The MTU rte_eth_dev_configure accepts: DPDK's own check (max_mtu, and
// max_rx_pktlen minus the PMD's overhead).
uint16_t ethdev_max_mtu(const rte_eth_dev_info& info);

// An af_packet vdev string without framesz/blocksz gets ring slots for
// `mtu` when the PMD's default 2048-byte slot cannot hold its frames, with
// a one-line `notice` saying so, and without framecnt a ring of about
// 8 MiB (512 to 4096 slots). The MTU taken is the smaller of `mtu` and
// the interface's, which bounds the port anyway. Other strings come back
// unchanged.
std::string af_packet_slots_for_mtu(const std::string& dev, uint16_t mtu, std::string& notice);

// false with a message if the request cannot be met at all.
bool plan_mtu(const rte_eth_dev_info& info, const std::string& devargs, uint16_t requested,
              const std::string& label, MtuPlan& plan, std::string& error);

}  // namespace uroce::dpdk
