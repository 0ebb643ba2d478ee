// SPDX-License-Identifier: BSD-3-Clause
// Plain Ethernet over the benchmark's ports: the link's own limit.
#pragma once

#include "runner.h"
#include "uroce/port/packet_port.h"

struct rte_mempool;

namespace uroce::perf {

// A frame size the port carries: at least 64 bytes, at most MTU + 14.
uint64_t raw_frame_size(uint64_t size, uint16_t port_mtu);
BwResult run_raw_bw(PacketPort& tx, PacketPort& rx, rte_mempool* pool, const Options& o, uint64_t size);
LatResult run_raw_lat(PacketPort& a, PacketPort& b, rte_mempool* pool, const Options& o, uint64_t size);

}  // namespace uroce::perf
