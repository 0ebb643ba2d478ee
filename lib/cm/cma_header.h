// SPDX-License-Identifier: BSD-3-Clause
// What Linux's rdma_cm adds on top of the CM: the service ID that names a
// port space and port, and the 36-byte header it puts in front of a REQ's
// (or SIDR REQ's) private data with both IP addresses and the active
// side's port (Linux cma.c's cma_hdr). Only REQ and SIDR REQ carry it.
#pragma once

#include <array>
#include <cstdint>
#include <span>

#include "uroce/wire/ip_addr.h"

namespace uroce::cm {

// Port spaces (rdma_cma.h's RDMA_PS_*): the service ID is
// (port space << 16) | port, the destination (listening) port.
enum class PortSpace : uint16_t { ipoib = 0x0002, tcp = 0x0106, udp = 0x0111, ib = 0x013f };

inline constexpr uint64_t service_id(PortSpace ps, uint16_t port) { return uint64_t(ps) << 16 | port; }
inline constexpr uint16_t service_port(uint64_t sid) { return uint16_t(sid); }
// The port space of an IP service ID; false for IDs outside the RDMA IP
// range (bits 63..32 zero, a known port space in bits 31..16).
bool service_port_space(uint64_t sid, PortSpace& ps);

inline constexpr size_t kCmaHeaderSize = 36;
inline constexpr uint8_t kCmaVersion = 0x00;

struct CmaHeader {
  wire::IpAddr src{};     // the active side
  wire::IpAddr dst{};     // the passive side (the listener's address)
  uint16_t src_port = 0;  // the active side's port; the destination port is in the service ID
};

// IPv4 addresses travel as 12 zero bytes and the address (not
// ::ffff-mapped); both addresses have the header's one IP version.
void encode_cma_header(const CmaHeader& h, uint8_t* out);
// False when the version is not 0, the IP version is neither 4 nor 6, or
// `in` is shorter than the header.
bool decode_cma_header(std::span<const uint8_t> in, CmaHeader& out);

// The flow label Linux's rdma_cm gives an IP connection on a RoCE v2
// port, from the active side's port and the destination port; the REQ
// carries it and both sides' QPs use it.
inline constexpr uint32_t cma_flow_label(uint16_t src_port, uint16_t dst_port) {
  return (uint32_t(src_port) * 31 + dst_port) & 0xfffff;
}

}  // namespace uroce::cm
