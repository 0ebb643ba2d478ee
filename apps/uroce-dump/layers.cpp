// SPDX-License-Identifier: BSD-3-Clause
#include "dump.h"

namespace uroce::dump {
namespace {

using namespace wire;

// Sets l3/ipv6/proto and returns where the UDP header would start (0: none).
size_t locate_ip(std::span<const uint8_t> f, size_t l3, uint16_t type, Layers& L) {
  if (type == kEtherTypeIpv4 && f.size() >= l3 + kIpv4MinHeaderLen) {
    Ipv4View ip(f.data() + l3);
    L.l3 = uint16_t(l3);
    L.proto = ip.protocol();
    // A later fragment carries no UDP header, and a bad IHL hides it.
    if (ip.frag_offset() != 0 || ip.header_len() < kIpv4MinHeaderLen) return 0;
    return l3 + ip.header_len();
  }
  if (type == kEtherTypeIpv6 && f.size() >= l3 + kIpv6HeaderLen) {
    L.l3 = uint16_t(l3);
    L.ipv6 = true;
    L.proto = Ipv6View(f.data() + l3).next_header();
    return l3 + kIpv6HeaderLen;
  }
  return 0;
}

}  // namespace

Layers locate_layers(std::span<const uint8_t> f) {
  Layers L;
  if (f.size() < kEthHeaderLen) return L;
  L.ethertype = EthView(f.data()).ethertype();
  size_t l3 = kEthHeaderLen;
  if (L.ethertype == kEtherTypeVlan) {
    if (f.size() < l3 + kVlanTagLen) return L;
    L.vlan = true;
    L.ethertype = VlanView(f.data() + l3).inner_ethertype();
    l3 += kVlanTagLen;
  }
  const size_t l4 = locate_ip(f, l3, L.ethertype, L);
  if (l4 == 0 || L.proto != kIpProtoUdp || f.size() < l4 + kUdpHeaderLen) return L;
  L.l4 = uint16_t(l4);
  L.dport = UdpView(f.data() + l4).dport();
  if (L.dport == kRoceV2Port && f.size() >= l4 + kUdpHeaderLen + kBthLen)
    L.bth = uint16_t(l4 + kUdpHeaderLen);
  return L;
}

}  // namespace uroce::dump
