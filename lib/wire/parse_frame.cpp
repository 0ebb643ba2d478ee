// SPDX-License-Identifier: BSD-3-Clause
#include "parse_headers.h"
#include "uroce/wire/icrc.h"

namespace uroce::wire {

ParseError parse_frame(std::span<const uint8_t> frame, PacketView& v, const ParseOptions& opts) {
  ParseError e = detail::parse_headers(frame.data(), frame.size(), frame.size(), v, opts);
  if (e != ParseError::ok) return e;
  v.payload = frame.data() + v.payload_off;
  const uint8_t* icrc_at = frame.data() + v.end_off - 4;
  v.icrc_wire = load_le32(icrc_at);
  if (opts.verify_udp_checksum && v.udp().checksum() != 0) {
    const uint8_t* l3 = frame.data() + v.l3_off;
    const uint8_t* udp = frame.data() + v.l4_off;
    size_t udp_len = v.udp().length();
    uint16_t sum = v.ipv6 ? udp_checksum_ipv6(l3, udp, udp_len) : udp_checksum_ipv4(l3, udp, udp_len);
    if (sum != 0) return ParseError::udp_checksum;
  }
  if (opts.verify_icrc) {
    uint32_t crc = detail::icrc_through_ext(v);
    const uint32_t body = v.payload_len + v.pad;
    v.icrc_calc = body ? crc32(crc, v.payload, body) : crc;
    if (v.icrc_calc != v.icrc_wire) return ParseError::icrc;
  }
  return ParseError::ok;
}

}  // namespace uroce::wire
