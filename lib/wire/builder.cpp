// SPDX-License-Identifier: BSD-3-Clause
#include "uroce/wire/builder.h"

#include <cstring>

#include "uroce/wire/ext_headers.h"
#include "uroce/wire/icrc.h"
#include "uroce/wire/ipv4.h"
#include "uroce/wire/ipv6.h"
#include "uroce/wire/opcode.h"
#include "uroce/wire/parser.h"
#include "ones_complement.h"
#include "write_ext.h"

namespace uroce::wire {
namespace {

constexpr size_t kIcrcLen = 4;

size_t write_l2(const EthFields& e, bool ipv6, uint8_t* p) {
  EthRef eth(p);
  eth.set_dst(e.dst);
  eth.set_src(e.src);
  const uint16_t l3_type = ipv6 ? kEtherTypeIpv6 : kEtherTypeIpv4;
  if (!e.has_vlan) {
    eth.set_ethertype(l3_type);
    return kEthHeaderLen;
  }
  eth.set_ethertype(kEtherTypeVlan);
  VlanRef vlan(p + kEthHeaderLen);
  vlan.set_tci(e.vlan_tci);
  vlan.set_inner_ethertype(l3_type);
  return kEthHeaderLen + kVlanTagLen;
}

uint32_t be16_at(const uint8_t* b) { return uint32_t(b[0]) << 8 | b[1]; }

// RFC 1071 over the header's 16-bit words, summed from the field values:
// reading the header back after its byte and 16-bit stores would make the
// wide loads wait for those stores to retire (store forwarding fails).
uint16_t ipv4_checksum_of(const IpFields& f, uint16_t total_len, uint8_t tos) {
  const uint8_t* s = f.src.v4_bytes();
  const uint8_t* d = f.dst.v4_bytes();
  uint32_t sum = (0x45u << 8 | tos) + total_len + f.id + (f.df ? 0x4000u : 0u) + (uint32_t(f.ttl) << 8 | kIpProtoUdp) +
                 be16_at(s) + be16_at(s + 2) + be16_at(d) + be16_at(d + 2);
  return detail::fold_complement(sum);
}

void write_ipv4(const IpFields& f, size_t udp_len, Ipv4Checksum csum, uint8_t* p) {
  Ipv4Ref ip(p);
  const uint16_t total_len = uint16_t(kIpv4MinHeaderLen + udp_len);
  ip.set_version_ihl();
  ip.set_tos(f.dscp, f.ecn);
  ip.set_total_len(total_len);
  ip.set_id(f.id);
  ip.set_flags_frag(f.df);
  ip.set_ttl(f.ttl);
  ip.set_protocol(kIpProtoUdp);
  std::memcpy(ip.src_ptr(), f.src.v4_bytes(), 4);
  std::memcpy(ip.dst_ptr(), f.dst.v4_bytes(), 4);
  ip.set_checksum(csum == Ipv4Checksum::compute ? ipv4_checksum_of(f, total_len, p[1]) : 0);
}

void write_ipv6(const IpFields& f, size_t udp_len, uint8_t* p) {
  Ipv6Ref ip(p);
  ip.set_vtc_flow(f.dscp, f.ecn, f.flow_label);
  ip.set_payload_len(uint16_t(udp_len));
  ip.set_next_header(kIpProtoUdp);
  ip.set_hop_limit(f.ttl);
  std::memcpy(ip.src_ptr(), f.src.bytes.data(), 16);
  std::memcpy(ip.dst_ptr(), f.dst.bytes.data(), 16);
}

void write_bth(const BthFields& b, uint8_t pad, uint8_t* p) {
  BthRef bth(p);
  bth.set_opcode(b.opcode);
  bth.set_flags(b.se, b.migreq, pad, b.tver);
  bth.set_pkey(b.pkey);
  bth.set_congestion(b.fecn, b.becn, b.resv6);
  bth.set_dest_qp(b.dest_qp);
  bth.set_ack_req_psn(b.ack_req, b.resv7, b.psn);
}

BuildError check_fields(const PacketFields& f, const OpcodeInfo& op) {
  if (!op.valid() || f.bth.tver != 0) return BuildError::bad_opcode;
  if (f.payload_len > 0 && !op.has(opf::payload)) return BuildError::payload_not_allowed;
  if (f.payload_len > kMaxPayloadLen) return BuildError::payload_too_long;
  if (!f.ip.ipv6 && (!f.ip.src.is_v4_mapped() || !f.ip.dst.is_v4_mapped())) return BuildError::bad_address;
  return BuildError::ok;
}

}  // namespace

namespace detail {

void write_ext(const OpcodeInfo& op, const ExtFields& x, uint8_t* bth) {
  auto at = [&](Ext e) { return bth + op.offset(e); };
  if (op.has_ext(Ext::deth)) DethT<uint8_t>(at(Ext::deth)).set(x.deth_qkey, x.deth_src_qp);
  if (op.has_ext(Ext::reth)) RethT<uint8_t>(at(Ext::reth)).set(x.reth_va, x.reth_rkey, x.reth_dma_len);
  if (op.has_ext(Ext::atomic_eth))
    AtomicEthT<uint8_t>(at(Ext::atomic_eth)).set(x.atomic_va, x.atomic_rkey, x.atomic_swap_add, x.atomic_compare);
  if (op.has_ext(Ext::aeth)) AethT<uint8_t>(at(Ext::aeth)).set(x.aeth_syndrome, x.aeth_msn);
  if (op.has_ext(Ext::atomic_ack_eth)) AtomicAckEthT<uint8_t>(at(Ext::atomic_ack_eth)).set(x.atomic_ack_orig);
  if (op.has_ext(Ext::imm_dt)) Word32T<uint8_t>(at(Ext::imm_dt)).set(x.imm);
  if (op.has_ext(Ext::ieth)) Word32T<uint8_t>(at(Ext::ieth)).set(x.ieth_rkey);
  if (op.has_ext(Ext::cnp_reserved)) std::memset(at(Ext::cnp_reserved), 0, kCnpReservedLen);
}

}  // namespace detail

const char* to_string(BuildError e) {
  switch (e) {
    case BuildError::ok: return "ok";
    case BuildError::bad_opcode: return "reserved or unsupported opcode, or TVer != 0";
    case BuildError::payload_not_allowed: return "opcode carries no payload";
    case BuildError::payload_too_long: return "payload longer than 4096 bytes";
    case BuildError::payload_mismatch: return "payload size differs from payload_len";
    case BuildError::no_room: return "output buffer too small";
    case BuildError::bad_address: return "IPv4 frame needs IPv4 (v4-mapped) addresses";
  }
  return "unknown";
}

BuildError build_headers(const PacketFields& f, std::span<uint8_t> out, FrameLayout& lay, Ipv4Checksum csum) {
  const OpcodeInfo& op = opcode_info(f.bth.opcode);
  if (BuildError e = check_fields(f, op); e != BuildError::ok) return e;
  const size_t l2_len = kEthHeaderLen + (f.eth.has_vlan ? kVlanTagLen : 0);
  const size_t l3_len = f.ip.ipv6 ? kIpv6HeaderLen : kIpv4MinHeaderLen;
  lay.pad = uint8_t((4 - f.payload_len % 4) % 4);
  lay.payload_len = f.payload_len;
  lay.ipv6 = f.ip.ipv6;
  lay.l3_off = uint16_t(l2_len);
  lay.l4_off = uint16_t(l2_len + l3_len);
  lay.bth_off = uint16_t(lay.l4_off + kUdpHeaderLen);
  lay.payload_off = uint16_t(lay.bth_off + op.header_len);
  const size_t udp_len = kUdpHeaderLen + op.header_len + f.payload_len + lay.pad + kIcrcLen;
  lay.frame_len = uint32_t(lay.l4_off + udp_len);
  if (out.size() < lay.payload_off) return BuildError::no_room;

  uint8_t* p = out.data();
  write_l2(f.eth, f.ip.ipv6, p);
  if (f.ip.ipv6)
    write_ipv6(f.ip, udp_len, p + lay.l3_off);
  else
    write_ipv4(f.ip, udp_len, csum, p + lay.l3_off);
  UdpRef udp(p + lay.l4_off);
  udp.set_sport(f.udp.sport);
  udp.set_dport(f.udp.dport);
  udp.set_length(uint16_t(udp_len));
  udp.set_checksum(f.udp.checksum);
  write_bth(f.bth, lay.pad, p + lay.bth_off);
  detail::write_ext(op, f.ext, p + lay.bth_off);
  return BuildError::ok;
}

uint32_t compute_icrc(const uint8_t* headers, const FrameLayout& lay,
                      std::span<const std::span<const uint8_t>> pieces) {
  static constexpr uint8_t kZeros[4] = {};
  size_t ext_len = lay.payload_off - (lay.bth_off + kBthLen);
  // A small payload already in place after the headers: one CRC call.
  if (pieces.size() == 1 && pieces[0].data() == headers + lay.payload_off && pieces[0].size() <= kIcrcSmallBody) {
    ext_len += pieces[0].size();
    pieces = {};
  }
  uint32_t crc = icrc_masked_headers(headers + lay.l3_off, lay.l4_off - lay.l3_off, lay.ipv6, ext_len);
  for (auto piece : pieces)
    if (!piece.empty()) crc = crc32(crc, piece.data(), piece.size());
  return lay.pad ? crc32(crc, kZeros, lay.pad) : crc;
}

BuildError build_frame(const PacketFields& f, std::span<const uint8_t> payload, std::span<uint8_t> out,
                       FrameLayout& lay, const BuildOptions& opts) {
  if (payload.size() != f.payload_len) return BuildError::payload_mismatch;
  if (BuildError e = build_headers(f, out, lay); e != BuildError::ok) return e;
  if (out.size() < lay.frame_len) return BuildError::no_room;
  uint8_t* p = out.data();
  if (!payload.empty()) std::memcpy(p + lay.payload_off, payload.data(), payload.size());
  std::memset(p + lay.payload_off + lay.payload_len, 0, lay.pad);
  const std::span<const uint8_t> piece[] = {payload};
  store_le32(p + lay.frame_len - 4, compute_icrc(p, lay, piece));
  // The UDP checksum covers the ICRC, while the ICRC masks the UDP checksum:
  // so the ICRC goes first.
  if (opts.compute_udp_checksum) {
    UdpRef udp(p + lay.l4_off);
    udp.set_checksum(0);
    const uint8_t* l3 = p + lay.l3_off;
    const size_t udp_len = udp.length();
    uint16_t sum = lay.ipv6 ? udp_checksum_ipv6(l3, p + lay.l4_off, udp_len)
                            : udp_checksum_ipv4(l3, p + lay.l4_off, udp_len);
    udp.set_checksum(sum == 0 ? 0xFFFF : sum);
  }
  return BuildError::ok;
}

}  // namespace uroce::wire
