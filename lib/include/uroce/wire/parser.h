// SPDX-License-Identifier: BSD-3-Clause
// Frame parser: validates a received frame and returns a zero-copy view.
//
// parse_frame() and parse_mbuf() check structure (every length, the IPv4
// header checksum, TVer, opcode, pad) and the ICRC, and never read outside
// the frame. check_semantics() adds the checks that need the opcode's
// meaning and, optionally, the path MTU; the transport answers those with a
// NAK instead of a silent drop, so they are kept apart.
#pragma once

#include "uroce/api.h"

#include <cstddef>
#include <cstdint>
#include <span>

#include "uroce/wire/bth.h"
#include "uroce/wire/eth.h"
#include "uroce/wire/ext_headers.h"
#include "uroce/wire/ipv4.h"
#include "uroce/wire/ipv6.h"
#include "uroce/wire/opcode.h"
#include "uroce/wire/packet_fields.h"
#include "uroce/wire/parse_error.h"
#include "uroce/wire/udp.h"

struct rte_mbuf;

namespace uroce::wire {

// Eth + VLAN + IPv4 with options + UDP + BTH + the longest extension headers.
inline constexpr size_t kMaxHeaderLen = 128;
inline constexpr uint32_t kMaxPayloadLen = 4096;

struct ParseOptions {
  bool verify_icrc = true;
  // parse_mbuf() skips it when the mbuf carries the port's verdict that
  // the header is good (RTE_MBUF_F_RX_IP_CKSUM_GOOD or _NONE).
  bool verify_ipv4_checksum = true;
  // A non-zero UDP checksum must be right (zero means "none", on IPv6 too,
  // as the UDP tunnel socket rxe listens on accepts). Checking it costs a
  // pass over the payload; parse_mbuf() takes the port's verdict from the
  // mbuf's RTE_MBUF_F_RX_L4_CKSUM_* flags when it has one. The engine and
  // tools turn it on.
  bool verify_udp_checksum = false;
  // Payloads over 4096 bytes (the largest path MTU) are refused as
  // payload_too_long unless this is set; the engine sets it so that the
  // QP's path MTU check answers them (a NAK on RC, as rxe does).
  bool allow_long_payload = false;
};

// A validated frame. Header bytes [0, payload_off) are contiguous at
// `headers`; the payload is contiguous at `payload` for parse_frame() and,
// for a segmented mbuf, starts at byte payload_off of `mbuf`.
struct PacketView {
  const uint8_t* headers = nullptr;
  const uint8_t* payload = nullptr;  // nullptr when the payload spans mbuf segments
  const rte_mbuf* mbuf = nullptr;
  const OpcodeInfo* op = nullptr;
  uint32_t frame_len = 0;  // bytes captured, including any Ethernet padding
  uint32_t end_off = 0;    // end of the UDP datagram (just past the ICRC)
  uint16_t l3_off = 0;
  uint16_t l4_off = 0;
  uint16_t bth_off = 0;
  uint16_t payload_off = 0;
  uint32_t payload_len = 0;
  uint8_t pad = 0;
  bool ipv6 = false;
  bool vlan = false;
  uint32_t icrc_wire = 0;  // as stored (little-endian) on the wire
  uint32_t icrc_calc = 0;  // valid when ICRC verification ran

  EthView eth() const { return EthView(headers); }
  VlanView vlan_tag() const { return VlanView(headers + kEthHeaderLen); }
  Ipv4View ipv4() const { return Ipv4View(headers + l3_off); }
  Ipv6View ipv6_hdr() const { return Ipv6View(headers + l3_off); }
  UdpView udp() const { return UdpView(headers + l4_off); }
  BthView bth() const { return BthView(headers + bth_off); }
  const uint8_t* ext(Ext e) const { return headers + bth_off + op->offset(e); }
  RethView reth() const { return RethView(ext(Ext::reth)); }
  AethView aeth() const { return AethView(ext(Ext::aeth)); }
  AtomicEthView atomic_eth() const { return AtomicEthView(ext(Ext::atomic_eth)); }
  AtomicAckEthView atomic_ack() const { return AtomicAckEthView(ext(Ext::atomic_ack_eth)); }
  ImmDtView imm() const { return ImmDtView(ext(Ext::imm_dt)); }
  IethView ieth() const { return IethView(ext(Ext::ieth)); }
  DethView deth() const { return DethView(ext(Ext::deth)); }
  uint8_t ecn() const { return ipv6 ? ipv6_hdr().ecn() : ipv4().ecn(); }
};

UROCE_API ParseError parse_frame(std::span<const uint8_t> frame, PacketView& out, const ParseOptions& opts = {});

// Headers are read in place when the first segment holds them all, and
// otherwise gathered into `scratch`, which must outlive `out`.
struct HeaderScratch {
  alignas(8) uint8_t bytes[kMaxHeaderLen];
};
UROCE_API ParseError parse_mbuf(const rte_mbuf* m, PacketView& out, HeaderScratch& scratch,
                      const ParseOptions& opts = {});

// Opcode-level checks on a parsed packet; pmtu 0 skips the MTU checks.
UROCE_API ParseError check_semantics(const PacketView& v, uint32_t pmtu = 0);

// All fields as values (the ones the opcode does not carry stay zero).
UROCE_API PacketFields decode_fields(const PacketView& v);

}  // namespace uroce::wire
