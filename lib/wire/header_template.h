// SPDX-License-Identifier: BSD-3-Clause
// The headers every frame of one connection shares (Ethernet, VLAN, IP,
// UDP and BTH with addresses, ports, P_Key, ECN and destination QP), built
// once from its PacketFields. A frame then copies them and writes only what
// differs from packet to packet: the lengths, the IPv4 checksum (from a sum
// kept of the fixed words), opcode, SE and pad, AckReq and PSN, and the
// extension headers. The result is byte for byte build_headers()'s.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "uroce/wire/builder.h"
#include "uroce/wire/packet_fields.h"

namespace uroce::wire {

// What a packet of a templated connection adds to the shared headers.
struct PacketSpec {
  uint8_t opcode = 0;
  uint32_t psn = 0;
  uint32_t payload_len = 0;
  bool ack_req = false;
  bool se = false;
};

class HeaderTemplate {
 public:
  // From f's addressing fields; its opcode, PSN, AckReq, SE, payload and
  // extension fields are not used. On error the template stays unusable.
  BuildError prepare(const PacketFields& f, Ipv4Checksum ipv4_checksum = Ipv4Checksum::compute);
  bool ready() const { return len_ != 0; }

  // Headers [0, layout.payload_off) of one packet into `out`, as
  // build_headers() would write them for the same fields.
  BuildError write(const PacketSpec& p, const ExtFields& ext, std::span<uint8_t> out, FrameLayout& layout) const;

 private:
  static constexpr size_t kMaxLen = 128;  // Ethernet + VLAN + IPv6 + UDP + BTH = 78
  alignas(64) uint8_t bytes_[kMaxLen] = {};
  uint16_t len_ = 0;  // through the BTH; 0 until prepared
  uint16_t l3_off_ = 0;
  uint16_t l4_off_ = 0;
  bool ipv6_ = false;
  bool ipv4_checksum_ = false;  // compute it (not offloaded)
  uint32_t ipv4_sum_ = 0;       // ones' complement sum of the fixed header words
};

}  // namespace uroce::wire
