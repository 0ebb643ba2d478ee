// SPDX-License-Identifier: BSD-3-Clause
#include "parse_headers.h"

#include "uroce/wire/icrc.h"

namespace uroce::wire::detail {
namespace {

constexpr size_t kIcrcLen = 4;

// L2: sets l3_off, vlan; returns the ethertype of the L3 header.
ParseError parse_l2(const uint8_t* hdr, size_t avail, PacketView& v, uint16_t& type) {
  if (avail < kEthHeaderLen) return ParseError::truncated;
  type = EthView(hdr).ethertype();
  v.l3_off = kEthHeaderLen;
  if (type == kEtherTypeVlan) {
    if (avail < kEthHeaderLen + kVlanTagLen) return ParseError::truncated;
    type = VlanView(hdr + kEthHeaderLen).inner_ethertype();
    v.l3_off += kVlanTagLen;
    v.vlan = true;
  }
  if (type != kEtherTypeIpv4 && type != kEtherTypeIpv6) return ParseError::not_roce;
  return ParseError::ok;
}

// Frame-relative offsets; returns the UDP datagram length the IP layer gives.
ParseError parse_ipv4(const uint8_t* hdr, size_t avail, size_t frame_len, PacketView& v,
                      const ParseOptions& opts, size_t& ip_payload) {
  if (avail < v.l3_off + kIpv4MinHeaderLen) return ParseError::truncated;
  Ipv4View ip(hdr + v.l3_off);
  const size_t ihl = ip.header_len();
  if (ip.version() != 4 || ihl < kIpv4MinHeaderLen) return ParseError::ip_version;
  if (avail < v.l3_off + ihl) return ParseError::truncated;
  if (ip.protocol() != kIpProtoUdp) return ParseError::not_roce;
  if (ip.frag_offset() != 0) return ParseError::not_roce;  // no UDP header to judge by
  if (ip.total_len() < ihl + kUdpHeaderLen) return ParseError::ip_length;
  if (v.l3_off + ip.total_len() > frame_len) return ParseError::truncated;
  if (avail < v.l3_off + ihl + kUdpHeaderLen) return ParseError::truncated;
  if (UdpView(hdr + v.l3_off + ihl).dport() != kRoceV2Port) return ParseError::not_roce;
  if (ip.mf()) return ParseError::ip_fragment;
  if (opts.verify_ipv4_checksum && ipv4_header_checksum(hdr + v.l3_off, ihl) != 0)
    return ParseError::ipv4_checksum;
  v.l4_off = uint16_t(v.l3_off + ihl);
  ip_payload = ip.total_len() - ihl;
  return ParseError::ok;
}

ParseError parse_ipv6(const uint8_t* hdr, size_t avail, size_t frame_len, PacketView& v,
                      size_t& ip_payload) {
  if (avail < v.l3_off + kIpv6HeaderLen) return ParseError::truncated;
  Ipv6View ip(hdr + v.l3_off);
  if (ip.version() != 6) return ParseError::ip_version;
  // RoCEv2 never uses IPv6 extension headers.
  if (ip.next_header() != kIpProtoUdp) return ParseError::not_roce;
  if (ip.payload_len() < kUdpHeaderLen) return ParseError::ip_length;
  if (v.l3_off + kIpv6HeaderLen + ip.payload_len() > frame_len) return ParseError::truncated;
  v.l4_off = uint16_t(v.l3_off + kIpv6HeaderLen);
  if (avail < v.l4_off + kUdpHeaderLen) return ParseError::truncated;
  if (UdpView(hdr + v.l4_off).dport() != kRoceV2Port) return ParseError::not_roce;
  v.ipv6 = true;
  ip_payload = ip.payload_len();
  return ParseError::ok;
}

// BTH, extension headers and the payload/pad/ICRC split.
ParseError parse_transport(const uint8_t* hdr, size_t avail, size_t udp_len, PacketView& v,
                           const ParseOptions& opts) {
  v.bth_off = uint16_t(v.l4_off + kUdpHeaderLen);
  const size_t roce_len = udp_len - kUdpHeaderLen;  // BTH .. ICRC
  if (roce_len < kBthLen + kIcrcLen || avail < v.bth_off + kBthLen) return ParseError::truncated;
  BthView bth(hdr + v.bth_off);
  if (bth.tver() != 0) return ParseError::bth_tver;
  v.op = &opcode_info(bth.opcode());
  if (!v.op->valid()) return ParseError::bth_opcode;
  if (roce_len < v.op->header_len + kIcrcLen) return ParseError::ext_truncated;
  v.payload_off = uint16_t(v.bth_off + v.op->header_len);
  if (avail < v.payload_off) return ParseError::truncated;
  const size_t rest = roce_len - v.op->header_len - kIcrcLen;  // payload + pad
  if (rest % 4 != 0) return ParseError::alignment;
  v.pad = bth.pad_count();
  if (v.pad > rest) return ParseError::padcount;
  if (rest > 0 && !v.op->has(opf::payload)) return ParseError::unexpected_payload;
  v.payload_len = uint32_t(rest - v.pad);
  if (v.payload_len > kMaxPayloadLen && !opts.allow_long_payload) return ParseError::payload_too_long;
  return ParseError::ok;
}

}  // namespace

ParseError parse_headers(const uint8_t* hdr, size_t avail, size_t frame_len, PacketView& v,
                         const ParseOptions& opts) {
  v = PacketView{};
  v.headers = hdr;
  v.frame_len = uint32_t(frame_len);
  uint16_t type = 0;
  ParseError e = parse_l2(hdr, avail, v, type);
  if (e != ParseError::ok) return e;
  size_t ip_payload = 0;
  e = type == kEtherTypeIpv4 ? parse_ipv4(hdr, avail, frame_len, v, opts, ip_payload)
                             : parse_ipv6(hdr, avail, frame_len, v, ip_payload);
  if (e != ParseError::ok) return e;
  const size_t udp_len = UdpView(hdr + v.l4_off).length();
  if (udp_len != ip_payload) return ParseError::udp_length;
  v.end_off = uint32_t(v.l4_off + udp_len);
  return parse_transport(hdr, avail, udp_len, v, opts);
}

uint32_t icrc_through_ext(const PacketView& v, size_t body_len) {
  const size_t ip_hdr_len = v.l4_off - v.l3_off;
  return icrc_masked_headers(v.headers + v.l3_off, ip_hdr_len, v.ipv6,
                             v.payload_off - (v.bth_off + kBthLen) + body_len);
}

}  // namespace uroce::wire::detail
