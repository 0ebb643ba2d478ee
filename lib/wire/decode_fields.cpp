// SPDX-License-Identifier: BSD-3-Clause
#include "uroce/wire/parser.h"

namespace uroce::wire {
namespace {

void decode_ip(const PacketView& v, IpFields& ip) {
  ip.ipv6 = v.ipv6;
  if (v.ipv6) {
    Ipv6View h = v.ipv6_hdr();
    ip.dscp = h.dscp();
    ip.ecn = h.ecn();
    ip.ttl = h.hop_limit();
    ip.flow_label = h.flow_label();
    ip.id = 0;
    ip.df = false;
    ip.src = IpAddr::from_v6(h.src());
    ip.dst = IpAddr::from_v6(h.dst());
  } else {
    Ipv4View h = v.ipv4();
    ip.dscp = h.dscp();
    ip.ecn = h.ecn();
    ip.ttl = h.ttl();
    ip.id = h.id();
    ip.df = h.df();
    ip.flow_label = 0;
    ip.src = IpAddr::from_v4(h.src());
    ip.dst = IpAddr::from_v4(h.dst());
  }
}

void decode_bth(BthView b, BthFields& f) {
  f.opcode = b.opcode();
  f.se = b.se();
  f.migreq = b.migreq();
  f.tver = b.tver();
  f.pkey = b.pkey();
  f.fecn = b.fecn();
  f.becn = b.becn();
  f.resv6 = b.resv6();
  f.dest_qp = b.dest_qp();
  f.ack_req = b.ack_req();
  f.resv7 = b.resv7();
  f.psn = b.psn();
}

void decode_ext(const PacketView& v, ExtFields& x) {
  const OpcodeInfo& op = *v.op;
  if (op.has_ext(Ext::reth)) {
    x.reth_va = v.reth().va();
    x.reth_rkey = v.reth().rkey();
    x.reth_dma_len = v.reth().dma_len();
  }
  if (op.has_ext(Ext::aeth)) {
    x.aeth_syndrome = v.aeth().syndrome();
    x.aeth_msn = v.aeth().msn();
  }
  if (op.has_ext(Ext::atomic_eth)) {
    x.atomic_va = v.atomic_eth().va();
    x.atomic_rkey = v.atomic_eth().rkey();
    x.atomic_swap_add = v.atomic_eth().swap_add();
    x.atomic_compare = v.atomic_eth().compare();
  }
  if (op.has_ext(Ext::atomic_ack_eth)) x.atomic_ack_orig = v.atomic_ack().orig();
  if (op.has_ext(Ext::imm_dt)) x.imm = v.imm().value();
  if (op.has_ext(Ext::ieth)) x.ieth_rkey = v.ieth().value();
  if (op.has_ext(Ext::deth)) {
    x.deth_qkey = v.deth().qkey();
    x.deth_src_qp = v.deth().src_qp();
  }
}

}  // namespace

PacketFields decode_fields(const PacketView& v) {
  PacketFields f;
  f.eth.dst = v.eth().dst();
  f.eth.src = v.eth().src();
  f.eth.has_vlan = v.vlan;
  f.eth.vlan_tci = v.vlan ? v.vlan_tag().tci() : 0;
  decode_ip(v, f.ip);
  f.udp.sport = v.udp().sport();
  f.udp.dport = v.udp().dport();
  f.udp.checksum = v.udp().checksum();
  decode_bth(v.bth(), f.bth);
  decode_ext(v, f.ext);
  f.payload_len = v.payload_len;
  return f;
}

}  // namespace uroce::wire
