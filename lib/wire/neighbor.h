// SPDX-License-Identifier: BSD-3-Clause
// ARP (RFC 826) and IPv6 Neighbor Discovery (RFC 4861) frames: the kernel
// does not own a DPDK port, so uroce answers for its own addresses and
// resolves its peers' MACs itself. Built untagged (the engine adds the
// device's 802.1Q tag); parsed with or without one.
#pragma once

#include <cstddef>
#include <cstdint>

#include "uroce/wire/eth.h"
#include "uroce/wire/ip_addr.h"

namespace uroce::wire {

// Room for the largest frame built here (NA/NS: 14 + 40 + 32 bytes).
inline constexpr size_t kNeighborFrameMax = 96;
inline constexpr uint8_t kIpProtoIcmpv6 = 58;

struct NeighborMsg {
  enum class Kind { arp_request, arp_reply, nd_solicit, nd_advert };
  Kind kind = Kind::arp_request;
  // The sender's address and, when the message carries it, its MAC (ARP
  // sender fields; the NS source / NA target link-layer option).
  IpAddr sender_ip;
  MacAddr sender_mac;
  bool has_sender_mac = false;
  // The address asked about (ARP target protocol address, ND target).
  IpAddr target;
  // Where a reply to this message goes.
  MacAddr reply_mac;
  IpAddr reply_ip;
};

// Parses an ARP or ND frame, 802.1Q-tagged or not; false for anything else or anything malformed
// (wrong lengths, hop limit not 255, bad ICMPv6 checksum, ...).
bool parse_neighbor(const uint8_t* frame, size_t len, NeighborMsg& out);

// Builders return the frame length (padded to the 60-byte Ethernet
// minimum); `buf` holds kNeighborFrameMax bytes.
size_t build_arp_request(uint8_t* buf, const MacAddr& mac, const IpAddr& ip, const IpAddr& target);
size_t build_arp_reply(uint8_t* buf, const MacAddr& mac, const IpAddr& ip, const NeighborMsg& request);
// To the target's solicited-node multicast address, with our MAC option.
size_t build_nd_solicit(uint8_t* buf, const MacAddr& mac, const IpAddr& ip, const IpAddr& target);
// Solicited, override, with our MAC as target link-layer option.
size_t build_nd_advert(uint8_t* buf, const MacAddr& mac, const IpAddr& ip, const NeighborMsg& solicit);

}  // namespace uroce::wire
