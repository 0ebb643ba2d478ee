// RFC 1071 Internet checksums for the IPv4 header and UDP.
#include <cstring>

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

uint16_t fold(uint32_t acc) {
  while (acc >> 16) acc = (acc & 0xFFFF) + (acc >> 16);
  return uint16_t(~acc);
}

}  // namespace

uint16_t ipv4_header_checksum(const uint8_t* hdr, size_t len) { return fold(sum16(0, hdr, len)); }

uint16_t udp_checksum_ipv4(const uint8_t* ip_hdr, const uint8_t* udp, size_t udp_len) {
  uint32_t acc = sum16(0, ip_hdr + 12, 8);  // source and destination address
  acc += kIpProtoUdp + uint32_t(udp_len);
  return fold(sum16(acc, udp, udp_len));
}

uint16_t udp_checksum_ipv6(const uint8_t* ip_hdr, const uint8_t* udp, size_t udp_len) {
  uint32_t acc = sum16(0, ip_hdr + 8, 32);
  acc += kIpProtoUdp + uint32_t(udp_len);
  return fold(sum16(acc, udp, udp_len));
}

}  // namespace uroce::wire
