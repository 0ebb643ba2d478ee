// SPDX-License-Identifier: BSD-3-Clause
// RFC 1071 Internet checksums for the IPv4 header and UDP.
#include <cstring>

#include "ones_complement.h"
#include "uroce/wire/ipv4.h"
#include "uroce/wire/ipv6.h"
#include "uroce/wire/udp.h"

namespace uroce::wire {
namespace {

uint32_t sum16(uint32_t acc, const uint8_t* p, size_t len) {
  for (; len >= 2; p += 2, len -= 2) acc += load_be16(p);
  if (len) acc += uint32_t(p[0]) << 8;
  return acc;
}

}  // namespace

uint16_t ipv4_header_checksum(const uint8_t* hdr, size_t len) {
  // RFC 1071's sum is independent of byte order (section 2B): add 32-bit
  // words as they lie in memory and swap once at the end, instead of one
  // big-endian load per 16 bits (this checks every IPv4 frame received;
  // the builder sums a frame's fields itself, see builder.cpp).
  uint64_t acc = 0;
  size_t i = 0;
  for (; i + 4 <= len; i += 4) {
    uint32_t w;
    std::memcpy(&w, hdr + i, 4);
    acc += w;
  }
  for (; i + 2 <= len; i += 2) {
    uint16_t w;
    std::memcpy(&w, hdr + i, 2);
    acc += w;
  }
  if (i < len) {  // an odd last byte: the high half of a zero-padded word
    uint16_t w = 0;
    std::memcpy(&w, hdr + i, 1);
    acc += w;
  }
  acc = (acc & 0xFFFFFFFF) + (acc >> 32);
  acc = (acc & 0xFFFFFFFF) + (acc >> 32);
  const uint16_t folded = detail::fold_complement(uint32_t(acc));
  uint8_t bytes[2];
  std::memcpy(bytes, &folded, 2);  // the checksum as it lies in memory
  return load_be16(bytes);
}

uint16_t udp_checksum_ipv4(const uint8_t* ip_hdr, const uint8_t* udp, size_t udp_len) {
  uint32_t acc = sum16(0, ip_hdr + 12, 8);  // source and destination address
  acc += kIpProtoUdp + uint32_t(udp_len);
  return detail::fold_complement(sum16(acc, udp, udp_len));
}

uint16_t udp_checksum_ipv6(const uint8_t* ip_hdr, const uint8_t* udp, size_t udp_len) {
  uint32_t acc = sum16(0, ip_hdr + 8, 32);
  acc += kIpProtoUdp + uint32_t(udp_len);
  return detail::fold_complement(sum16(acc, udp, udp_len));
}

}  // namespace uroce::wire
