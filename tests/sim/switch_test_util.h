// SPDX-License-Identifier: BSD-3-Clause
// IP frames with an ECN field for the switch tests.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "sim_test_util.h"
#include "uroce/wire/ipv4.h"
#include "uroce/wire/ipv6.h"

namespace uroce::test {

// Where ip_frame() keeps its tag: past either IP header.
inline constexpr size_t kIpTagOff = wire::kEthHeaderLen + wire::kIpv6HeaderLen;

// An IPv4 (or IPv6) frame of `size` bytes with the given ECN codepoint, a
// correct IPv4 header checksum, and `tag` at kIpTagOff.
inline std::vector<uint8_t> ip_frame(const wire::MacAddr& dst, const wire::MacAddr& src, size_t size,
                                     uint32_t tag, uint8_t ecn, bool v6 = false) {
  auto f = make_frame(dst, src, size, tag, v6 ? wire::kEtherTypeIpv6 : wire::kEtherTypeIpv4);
  uint8_t* ip = f.data() + wire::kEthHeaderLen;
  if (v6) {
    wire::Ipv6Ref h(ip);
    h.set_vtc_flow(26, ecn, 0x12345);
    h.set_payload_len(uint16_t(size - wire::kEthHeaderLen - wire::kIpv6HeaderLen));
    h.set_next_header(wire::kIpProtoUdp);
    h.set_hop_limit(64);
  } else {
    wire::Ipv4Ref h(ip);
    h.set_version_ihl();
    h.set_tos(26, ecn);
    h.set_total_len(uint16_t(size - wire::kEthHeaderLen));
    h.set_id(uint16_t(tag));
    h.set_flags_frag(true);
    h.set_ttl(64);
    h.set_protocol(wire::kIpProtoUdp);
    h.set_checksum(0);
    h.set_checksum(wire::ipv4_header_checksum(ip, wire::kIpv4MinHeaderLen));
  }
  std::memcpy(f.data() + kIpTagOff, &tag, sizeof tag);
  return f;
}

inline uint32_t ip_tag(const std::vector<uint8_t>& f) {
  uint32_t tag = 0;
  std::memcpy(&tag, f.data() + kIpTagOff, sizeof tag);
  return tag;
}

inline uint8_t ecn_of(const std::vector<uint8_t>& f) {
  const uint8_t* ip = f.data() + wire::kEthHeaderLen;
  return (ip[0] >> 4) == 6 ? wire::Ipv6View(ip).ecn() : wire::Ipv4View(ip).ecn();
}

}  // namespace uroce::test
