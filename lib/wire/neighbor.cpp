// SPDX-License-Identifier: BSD-3-Clause
#include "wire/neighbor.h"

#include <cstring>

#include "uroce/wire/byte_order.h"
#include "uroce/wire/ipv6.h"

namespace uroce::wire {
namespace {

constexpr size_t kArpLen = 28;
constexpr size_t kMinFrame = 60;
constexpr uint8_t kNs = 135, kNa = 136;
constexpr uint8_t kOptSourceMac = 1, kOptTargetMac = 2;
constexpr MacAddr kBroadcast{{0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF}};

uint16_t icmpv6_checksum(const uint8_t* ip6, const uint8_t* icmp, size_t len) {
  uint32_t acc = 0;
  for (size_t i = 8; i < 40; i += 2) acc += load_be16(ip6 + i);  // source and destination
  acc += uint32_t(len) + kIpProtoIcmpv6;
  for (size_t i = 0; i + 1 < len; i += 2) acc += load_be16(icmp + i);
  if (len & 1) acc += uint32_t(icmp[len - 1]) << 8;
  while (acc >> 16) acc = (acc & 0xFFFF) + (acc >> 16);
  return uint16_t(~acc);
}

size_t eth_header(uint8_t* buf, const MacAddr& dst, const MacAddr& src, uint16_t type) {
  std::memcpy(buf, dst.bytes.data(), 6);
  std::memcpy(buf + 6, src.bytes.data(), 6);
  store_be16(buf + 12, type);
  return kEthHeaderLen;
}

size_t pad(uint8_t* buf, size_t len) {
  if (len < kMinFrame) std::memset(buf + len, 0, kMinFrame - len);
  return len < kMinFrame ? kMinFrame : len;
}

size_t build_arp(uint8_t* buf, uint16_t op, const MacAddr& eth_dst, const MacAddr& sha, const uint8_t* spa,
                 const MacAddr& tha, const uint8_t* tpa) {
  size_t off = eth_header(buf, eth_dst, sha, kEtherTypeArp);
  uint8_t* a = buf + off;
  store_be16(a, 1);  // Ethernet
  store_be16(a + 2, kEtherTypeIpv4);
  a[4] = 6;
  a[5] = 4;
  store_be16(a + 6, op);
  std::memcpy(a + 8, sha.bytes.data(), 6);
  std::memcpy(a + 14, spa, 4);
  std::memcpy(a + 18, tha.bytes.data(), 6);
  std::memcpy(a + 24, tpa, 4);
  return pad(buf, off + kArpLen);
}

bool parse_arp(const uint8_t* a, size_t len, NeighborMsg& out) {
  if (len < kArpLen || load_be16(a) != 1 || load_be16(a + 2) != kEtherTypeIpv4 || a[4] != 6 || a[5] != 4)
    return false;
  const uint16_t op = load_be16(a + 6);
  if (op != 1 && op != 2) return false;
  out.kind = op == 1 ? NeighborMsg::Kind::arp_request : NeighborMsg::Kind::arp_reply;
  std::memcpy(out.sender_mac.bytes.data(), a + 8, 6);
  out.has_sender_mac = true;
  out.sender_ip = IpAddr::from_v4(a + 14);
  out.target = IpAddr::from_v4(a + 24);
  out.reply_mac = out.sender_mac;
  out.reply_ip = out.sender_ip;
  return true;
}

// ICMPv6 NS/NA: type, code, checksum, reserved/flags (4), target (16), options.
size_t build_nd(uint8_t* buf, uint8_t type, uint32_t flags, const MacAddr& eth_dst, const MacAddr& mac,
                const IpAddr& src, const uint8_t* dst_ip, const IpAddr& target, uint8_t opt) {
  size_t off = eth_header(buf, eth_dst, mac, kEtherTypeIpv6);
  uint8_t* ip = buf + off;
  uint8_t* icmp = ip + kIpv6HeaderLen;
  const size_t icmp_len = 32;
  store_be32(ip, 0x60000000);
  store_be16(ip + 4, uint16_t(icmp_len));
  ip[6] = kIpProtoIcmpv6;
  ip[7] = 255;  // RFC 4861: receivers drop ND with any other hop limit
  std::memcpy(ip + 8, src.bytes.data(), 16);
  std::memcpy(ip + 24, dst_ip, 16);
  std::memset(icmp, 0, icmp_len);
  icmp[0] = type;
  store_be32(icmp + 4, flags);
  std::memcpy(icmp + 8, target.bytes.data(), 16);
  icmp[24] = opt;
  icmp[25] = 1;  // option length in units of 8 bytes
  std::memcpy(icmp + 26, mac.bytes.data(), 6);
  store_be16(icmp + 2, icmpv6_checksum(ip, icmp, icmp_len));
  return pad(buf, off + kIpv6HeaderLen + icmp_len);
}

// `src_mac`: the frame's source address, where a solicitation without a
// source link-layer option is answered.
bool parse_nd(const uint8_t* ip, size_t len, const uint8_t* src_mac, NeighborMsg& out) {
  if (len < kIpv6HeaderLen + 24 || (ip[0] >> 4) != 6 || ip[6] != kIpProtoIcmpv6 || ip[7] != 255) return false;
  const size_t icmp_len = load_be16(ip + 4);
  if (icmp_len < 24 || kIpv6HeaderLen + icmp_len > len) return false;
  const uint8_t* icmp = ip + kIpv6HeaderLen;
  if ((icmp[0] != kNs && icmp[0] != kNa) || icmp[1] != 0) return false;
  if (icmpv6_checksum(ip, icmp, icmp_len) != 0) return false;
  out.kind = icmp[0] == kNs ? NeighborMsg::Kind::nd_solicit : NeighborMsg::Kind::nd_advert;
  out.target = IpAddr::from_v6(icmp + 8);
  out.sender_ip = out.kind == NeighborMsg::Kind::nd_advert ? out.target : IpAddr::from_v6(ip + 8);
  out.reply_ip = IpAddr::from_v6(ip + 8);
  std::memcpy(out.reply_mac.bytes.data(), src_mac, 6);
  const uint8_t want = out.kind == NeighborMsg::Kind::nd_solicit ? kOptSourceMac : kOptTargetMac;
  for (size_t o = 24; o + 8 <= icmp_len;) {
    const size_t olen = size_t(icmp[o + 1]) * 8;
    if (olen == 0 || o + olen > icmp_len) return false;  // RFC 4861 4.6: a zero length is invalid
    if (icmp[o] == want && olen == 8) {
      std::memcpy(out.sender_mac.bytes.data(), icmp + o + 2, 6);
      out.has_sender_mac = true;
    }
    o += olen;
  }
  return true;
}

}  // namespace

bool parse_neighbor(const uint8_t* frame, size_t len, NeighborMsg& out) {
  if (len < kEthHeaderLen) return false;
  size_t l2 = kEthHeaderLen;
  uint16_t type = load_be16(frame + 12);
  if (type == kEtherTypeVlan) {  // the engine has checked the VLAN id
    if (len < kEthHeaderLen + kVlanTagLen) return false;
    type = load_be16(frame + 16);
    l2 += kVlanTagLen;
  }
  if (type == kEtherTypeArp) return parse_arp(frame + l2, len - l2, out);
  if (type == kEtherTypeIpv6) return parse_nd(frame + l2, len - l2, frame + 6, out);
  return false;
}

size_t build_arp_request(uint8_t* buf, const MacAddr& mac, const IpAddr& ip, const IpAddr& target) {
  return build_arp(buf, 1, kBroadcast, mac, ip.v4_bytes(), MacAddr{}, target.v4_bytes());
}

size_t build_arp_reply(uint8_t* buf, const MacAddr& mac, const IpAddr& ip, const NeighborMsg& request) {
  return build_arp(buf, 2, request.sender_mac, mac, ip.v4_bytes(), request.sender_mac, request.sender_ip.v4_bytes());
}

size_t build_nd_solicit(uint8_t* buf, const MacAddr& mac, const IpAddr& ip, const IpAddr& target) {
  // Solicited-node multicast ff02::1:ffXX:XXXX and its MAC 33:33:ff:XX:XX:XX.
  uint8_t group[16] = {0xFF, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01, 0xFF};
  std::memcpy(group + 13, target.bytes.data() + 13, 3);
  const MacAddr dst{{0x33, 0x33, 0xFF, target.bytes[13], target.bytes[14], target.bytes[15]}};
  return build_nd(buf, kNs, 0, dst, mac, ip, group, target, kOptSourceMac);
}

size_t build_nd_advert(uint8_t* buf, const MacAddr& mac, const IpAddr& ip, const NeighborMsg& solicit) {
  constexpr uint32_t kSolicited = 1u << 30, kOverride = 1u << 29;
  const MacAddr dst = solicit.has_sender_mac ? solicit.sender_mac : solicit.reply_mac;
  return build_nd(buf, kNa, kSolicited | kOverride, dst, mac, ip, solicit.reply_ip.bytes.data(), ip, kOptTargetMac);
}

}  // namespace uroce::wire
