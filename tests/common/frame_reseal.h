// SPDX-License-Identifier: BSD-3-Clause
// Makes an edited RoCEv2 frame consistent again: the attack suite and the
// RX filter tests build frames the builder refuses (grown payloads, edited
// headers) and must still get them past the IP, UDP and ICRC checks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "uroce/wire/bth.h"
#include "uroce/wire/byte_order.h"
#include "uroce/wire/icrc.h"
#include "uroce/wire/ipv4.h"

namespace uroce::test {

// Byte offsets inside a frame without VLAN tag.
struct Offsets {
  size_t l3 = 14, l4 = 0, bth = 0;
  bool ipv6 = false;
};

inline Offsets offsets_of(const std::vector<uint8_t>& frame) {
  Offsets o;
  o.ipv6 = frame[12] == 0x86 && frame[13] == 0xDD;
  o.l4 = o.l3 + (o.ipv6 ? 40 : size_t(frame[o.l3] & 0x0F) * 4);
  o.bth = o.l4 + 8;
  return o;
}

// Rewrites the IP and UDP lengths for the frame's size, the IPv4 header
// checksum and the ICRC (the frame's last 4 bytes), after an edit.
inline void reseal(std::vector<uint8_t>& frame) {
  const Offsets o = offsets_of(frame);
  const size_t udp_len = frame.size() - o.l4;
  frame[o.l4 + 4] = uint8_t(udp_len >> 8);
  frame[o.l4 + 5] = uint8_t(udp_len);
  if (o.ipv6) {
    frame[o.l3 + 4] = uint8_t(udp_len >> 8);
    frame[o.l3 + 5] = uint8_t(udp_len);
  } else {
    const size_t total = frame.size() - o.l3;
    frame[o.l3 + 2] = uint8_t(total >> 8);
    frame[o.l3 + 3] = uint8_t(total);
    frame[o.l3 + 10] = frame[o.l3 + 11] = 0;
    const uint16_t sum = wire::ipv4_header_checksum(frame.data() + o.l3, o.l4 - o.l3);
    frame[o.l3 + 10] = uint8_t(sum >> 8);
    frame[o.l3 + 11] = uint8_t(sum);
  }
  // Masked IP/UDP/BTH, then everything after the BTH up to the ICRC.
  uint32_t crc = wire::icrc_masked_headers(frame.data() + o.l3, o.l4 - o.l3, o.ipv6, 0);
  const size_t after_bth = o.bth + wire::kBthLen;
  crc = wire::crc32(crc, frame.data() + after_bth, frame.size() - 4 - after_bth);
  wire::store_le32(frame.data() + frame.size() - 4, crc);
}

}  // namespace uroce::test
