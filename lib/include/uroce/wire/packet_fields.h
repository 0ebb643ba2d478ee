// SPDX-License-Identifier: BSD-3-Clause
// Every field of a RoCEv2 frame as plain values: what the builder takes and
// what decode_fields() returns for a parsed frame, so that build -> parse ->
// decode gives back the same struct.
//
// Derived fields (IP/UDP lengths, IPv4 checksum, pad count, ICRC) are not
// here: the builder computes them and the parser checks them.
#pragma once

#include <cstdint>

#include "uroce/wire/bth.h"
#include "uroce/wire/eth.h"
#include "uroce/wire/ip_addr.h"
#include "uroce/wire/udp.h"

namespace uroce::wire {

struct EthFields {
  MacAddr dst;
  MacAddr src;
  bool has_vlan = false;
  uint16_t vlan_tci = 0;  // PCP(3) DEI(1) VID(12)
  bool operator==(const EthFields&) const = default;
};

struct IpFields {
  bool ipv6 = false;
  uint8_t dscp = 0;
  uint8_t ecn = 0;
  uint8_t ttl = 64;          // hop limit for IPv6
  uint16_t id = 0;           // IPv4 only
  bool df = true;            // IPv4 only; rxe sets it
  uint32_t flow_label = 0;   // IPv6 only
  IpAddr src;                // v4-mapped for IPv4
  IpAddr dst;
  bool operator==(const IpFields&) const = default;
};

struct UdpFields {
  uint16_t sport = kRoceSportMin;
  uint16_t dport = kRoceV2Port;
  // 0 on transmit is what RoCEv2 senders use; the builder fills it only
  // when compute_udp_checksum is set.
  uint16_t checksum = 0;
  bool operator==(const UdpFields&) const = default;
};

struct BthFields {
  uint8_t opcode = 0;
  bool se = false;
  bool migreq = false;
  uint8_t tver = 0;
  uint16_t pkey = kDefaultPkey;
  bool fecn = false;
  bool becn = false;
  uint8_t resv6 = 0;
  uint32_t dest_qp = 0;
  bool ack_req = false;
  uint8_t resv7 = 0;
  uint32_t psn = 0;
  bool operator==(const BthFields&) const = default;
};

// Extension header values; only those the opcode carries are meaningful
// (decode_fields() leaves the others zero).
struct ExtFields {
  uint64_t reth_va = 0;
  uint32_t reth_rkey = 0;
  uint32_t reth_dma_len = 0;
  uint8_t aeth_syndrome = 0;
  uint32_t aeth_msn = 0;
  uint64_t atomic_va = 0;
  uint32_t atomic_rkey = 0;
  uint64_t atomic_swap_add = 0;
  uint64_t atomic_compare = 0;
  uint64_t atomic_ack_orig = 0;
  uint32_t imm = 0;
  uint32_t ieth_rkey = 0;
  uint32_t deth_qkey = 0;
  uint32_t deth_src_qp = 0;
  bool operator==(const ExtFields&) const = default;
};

struct PacketFields {
  EthFields eth;
  IpFields ip;
  UdpFields udp;
  BthFields bth;
  ExtFields ext;
  uint32_t payload_len = 0;
  bool operator==(const PacketFields&) const = default;
};

}  // namespace uroce::wire
