// SPDX-License-Identifier: BSD-3-Clause
// One human-readable line per packet, then a summary block.
#include <cinttypes>
#include <cstdarg>
#include <cstdio>

#include "dump.h"

namespace uroce::dump {
namespace {

using namespace wire;

[[gnu::format(printf, 2, 3)]] void appendf(std::string& s, const char* fmt, ...) {
  char buf[256];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  s += buf;
}

std::string ip_text(const uint8_t* addr, bool v6) {
  return (v6 ? IpAddr::from_v6(addr) : IpAddr::from_v4(addr)).to_string();
}

// "src:sport -> dst", brackets around an IPv6 source as in URLs.
void append_addresses(std::string& s, std::span<const uint8_t> f, const Layers& L) {
  if (L.l3 == 0) return;
  const uint8_t* ip = f.data() + L.l3;
  const std::string src = L.ipv6 ? ip_text(Ipv6View(ip).src(), true) : ip_text(Ipv4View(ip).src(), false);
  const std::string dst = L.ipv6 ? ip_text(Ipv6View(ip).dst(), true) : ip_text(Ipv4View(ip).dst(), false);
  s += L.ipv6 ? " [" + src + "]" : " " + src;
  if (L.l4 != 0) appendf(s, ":%u", UdpView(f.data() + L.l4).sport());
  s += " -> " + dst;
}

void append_bth(std::string& s, BthView b) {
  appendf(s, " %s qpn=0x%06x psn=0x%06x", opcode_name(b.opcode()).c_str(), b.dest_qp(), b.psn());
  std::string flags;
  const std::pair<bool, const char*> bits[] = {
      {b.se(), "SE"}, {b.migreq(), "MigReq"}, {b.ack_req(), "AckReq"}, {b.fecn(), "FECN"}, {b.becn(), "BECN"}};
  for (const auto& [set, name] : bits) {
    if (!set) continue;
    if (!flags.empty()) flags += ',';
    flags += name;
  }
  appendf(s, " flags=%s pad=%u", flags.empty() ? "-" : flags.c_str(), b.pad_count());
}

void append_aeth(std::string& s, AethView a) {
  const uint8_t syn = a.syndrome();
  appendf(s, " AETH(%s", aeth_type_name(syn));
  switch (aeth_type(syn)) {
    case AethType::ack: appendf(s, " credit=%u", aeth_value(syn)); break;
    case AethType::rnr_nak: appendf(s, " timer=%u", aeth_value(syn)); break;
    case AethType::nak: appendf(s, " %s(%u)", nak_code_name(aeth_value(syn)), aeth_value(syn)); break;
    case AethType::reserved: appendf(s, " syndrome=0x%02x", syn); break;
  }
  appendf(s, " msn=%u)", a.msn());
}

void append_ext(std::string& s, const PacketView& v) {
  const OpcodeInfo& op = *v.op;
  if (op.has_ext(Ext::deth)) appendf(s, " DETH(qkey=0x%08x srcqp=0x%06x)", v.deth().qkey(), v.deth().src_qp());
  if (op.has_ext(Ext::reth))
    appendf(s, " RETH(va=0x%016" PRIx64 " rkey=0x%08x len=%u)", v.reth().va(), v.reth().rkey(),
            v.reth().dma_len());
  if (op.has_ext(Ext::atomic_eth)) {
    AtomicEthView a = v.atomic_eth();
    appendf(s, " AtomicETH(va=0x%016" PRIx64 " rkey=0x%08x swap_add=0x%016" PRIx64 " compare=0x%016" PRIx64 ")",
            a.va(), a.rkey(), a.swap_add(), a.compare());
  }
  if (op.has_ext(Ext::aeth)) append_aeth(s, v.aeth());
  if (op.has_ext(Ext::atomic_ack_eth)) appendf(s, " AtomicAckETH(orig=0x%016" PRIx64 ")", v.atomic_ack().orig());
  if (op.has_ext(Ext::imm_dt)) appendf(s, " ImmDt(0x%08x)", v.imm().value());
  if (op.has_ext(Ext::ieth)) appendf(s, " IETH(rkey=0x%08x)", v.ieth().value());
}

void append_icrc(std::string& s, const Record& r) {
  if (!r.icrc_checked)
    s += " icrc=-";
  else if (r.view.icrc_calc == r.view.icrc_wire)
    s += " icrc=ok";
  else
    appendf(s, " icrc=bad(wire=0x%08x,computed=0x%08x)", r.view.icrc_wire, r.view.icrc_calc);
}

const char* protocol_name(uint8_t proto) {
  switch (proto) {
    case 1: return "ICMP";
    case 6: return "TCP";
    case kIpProtoUdp: return "UDP";
    case 58: return "ICMPv6";
    default: return "protocol";
  }
}

void append_verdict(std::string& s, const Record& r) {
  if (r.error == ParseError::ok)
    s += " valid";
  else
    appendf(s, " INVALID %s: %s", to_string(r.error), describe(r.error));
}

class TextFormatter : public Formatter {
 public:
  void packet(const Record& r) override {
    std::string s;
    appendf(s, "#%" PRIu64, r.frame);
    append_addresses(s, r.bytes, r.layers);
    if (r.layers.bth != 0) append_bth(s, BthView(r.bytes.data() + r.layers.bth));
    if (r.parsed) {
      append_ext(s, r.view);
      appendf(s, " payload=%u", r.view.payload_len);
    }
    append_icrc(s, r);
    append_verdict(s, r);
    std::puts(s.c_str());
  }

  void other(const Record& r) override {
    std::string s;
    appendf(s, "#%" PRIu64 " not RoCEv2:", r.frame);
    if (r.layers.l3 == 0) {
      appendf(s, " %s 0x%04x", r.layers.ethertype == kEtherTypeArp ? "ARP" : "ethertype", r.layers.ethertype);
    } else {
      append_addresses(s, r.bytes, r.layers);
      appendf(s, " %s %s %u", r.layers.ipv6 ? "IPv6" : "IPv4", protocol_name(r.layers.proto), r.layers.proto);
      if (r.layers.l4 != 0) appendf(s, " dport %u", r.layers.dport);
    }
    std::puts(s.c_str());
  }

  void summary(const Summary& m) override {
    std::printf("-- summary of %s\n", m.file.c_str());
    std::printf("packets read:    %" PRIu64 "\n", m.frames);
    std::printf("RoCEv2 packets:  %" PRIu64 "\n", m.roce);
    std::printf("  valid:         %" PRIu64 "\n", m.valid);
    std::printf("  invalid:       %" PRIu64 "\n", m.invalid);
    for (const auto& [e, n] : m.errors) std::printf("    %s: %" PRIu64 " (%s)\n", to_string(e), n, describe(e));
    std::printf("other frames:    %" PRIu64 " (not UDP port 4791; listed with --all)\n", m.other);
    if (m.pmtu != 0) std::printf("path MTU:        %u (enforced)\n", m.pmtu);
    if (m.roce == 0) std::printf("note: no RoCEv2 (UDP port 4791) packets in this capture\n");
  }
};

}  // namespace

std::unique_ptr<Formatter> make_text_formatter() { return std::make_unique<TextFormatter>(); }

}  // namespace uroce::dump
