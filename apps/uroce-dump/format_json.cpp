// SPDX-License-Identifier: BSD-3-Clause
// One JSON object per line: each packet, then the summary. Field names
// follow the independent oracle's JSON (and the test vectors), so the two
// can be compared key by key. 64-bit values are "0x..." strings, because
// JSON readers commonly hold numbers as doubles.
#include <cinttypes>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "dump.h"

namespace uroce::dump {
namespace {

using namespace wire;
using Json = nlohmann::ordered_json;

std::string hex(uint64_t v, int digits) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%0*" PRIx64, digits, v);
  return buf;
}

Json eth_json(std::span<const uint8_t> f, const Layers& L) {
  EthView eth(f.data());
  Json j = {{"dst", eth.dst().to_string()}, {"src", eth.src().to_string()}, {"ethertype", hex(L.ethertype, 4)}};
  if (L.vlan) {
    VlanView tag(f.data() + kEthHeaderLen);
    j["vlan"] = {{"vid", tag.vid()}, {"pcp", tag.pcp()}, {"dei", (tag.tci() >> 12) & 1}};
  }
  return j;
}

Json ipv4_json(Ipv4View ip) {
  return {{"version", ip.version()}, {"src", IpAddr::from_v4(ip.src()).to_string()},
          {"dst", IpAddr::from_v4(ip.dst()).to_string()}, {"dscp", ip.dscp()}, {"ecn", ip.ecn()},
          {"total_length", ip.total_len()}, {"id", ip.id()}, {"df", ip.df()}, {"mf", ip.mf()},
          {"frag_offset", ip.frag_offset()}, {"ttl", ip.ttl()}, {"proto", ip.protocol()},
          {"checksum", hex(ip.checksum(), 4)}};
}

Json ipv6_json(Ipv6View ip) {
  return {{"version", ip.version()}, {"src", IpAddr::from_v6(ip.src()).to_string()},
          {"dst", IpAddr::from_v6(ip.dst()).to_string()}, {"dscp", ip.dscp()}, {"ecn", ip.ecn()},
          {"flow_label", ip.flow_label()}, {"payload_length", ip.payload_len()},
          {"next_header", ip.next_header()}, {"hop_limit", ip.hop_limit()}};
}

Json udp_json(UdpView u) {
  return {{"sport", u.sport()}, {"dport", u.dport()}, {"length", u.length()}, {"checksum", hex(u.checksum(), 4)}};
}

Json bth_json(BthView b) {
  return {{"opcode", b.opcode()},   {"opcode_name", opcode_name(b.opcode())},
          {"se", b.se()},           {"migreq", b.migreq()},
          {"padcount", b.pad_count()}, {"tver", b.tver()},
          {"pkey", b.pkey()},       {"fecn", b.fecn()},
          {"becn", b.becn()},       {"resv6", b.resv6()},
          {"dest_qp", b.dest_qp()}, {"ackreq", b.ack_req()},
          {"resv7", b.resv7()},     {"psn", b.psn()}};
}

Json aeth_json(AethView a) {
  const uint8_t syn = a.syndrome();
  Json j = {{"syndrome", syn}, {"msn", a.msn()}, {"type", aeth_type_name(syn)}};
  switch (aeth_type(syn)) {
    case AethType::ack: j["credit"] = aeth_value(syn); break;
    case AethType::rnr_nak: j["rnr_timer"] = aeth_value(syn); break;
    case AethType::nak:
      j["nak_code"] = aeth_value(syn);
      j["nak_name"] = nak_code_name(aeth_value(syn));
      break;
    case AethType::reserved: break;
  }
  return j;
}

Json ext_json(const PacketView& v) {
  const OpcodeInfo& op = *v.op;
  Json j = Json::object();
  if (op.has_ext(Ext::deth)) {
    // Byte 4 is reserved; DethView has no accessor because nothing acts on it.
    const uint8_t reserved = v.ext(Ext::deth)[4];
    j["DETH"] = {{"qkey", v.deth().qkey()}, {"reserved", reserved}, {"src_qp", v.deth().src_qp()}};
  }
  if (op.has_ext(Ext::reth))
    j["RETH"] = {{"va", hex(v.reth().va(), 16)}, {"rkey", v.reth().rkey()}, {"dma_len", v.reth().dma_len()}};
  if (op.has_ext(Ext::atomic_eth)) {
    AtomicEthView a = v.atomic_eth();
    j["AtomicETH"] = {{"va", hex(a.va(), 16)}, {"rkey", a.rkey()}, {"swap_add", hex(a.swap_add(), 16)},
                      {"compare", hex(a.compare(), 16)}};
  }
  if (op.has_ext(Ext::aeth)) j["AETH"] = aeth_json(v.aeth());
  if (op.has_ext(Ext::atomic_ack_eth)) j["AtomicAckETH"] = {{"orig_remote_data", hex(v.atomic_ack().orig(), 16)}};
  if (op.has_ext(Ext::imm_dt)) j["ImmDt"] = {{"imm", v.imm().value()}};
  if (op.has_ext(Ext::ieth)) j["IETH"] = {{"rkey", v.ieth().value()}};
  return j;
}

// The headers present in the captured bytes, whether or not the packet is valid.
void add_layers(Json& j, const Record& r) {
  const Layers& L = r.layers;
  const uint8_t* f = r.bytes.data();
  if (L.ethertype != 0) j["eth"] = eth_json(r.bytes, L);
  if (L.l3 != 0) j["ip"] = L.ipv6 ? ipv6_json(Ipv6View(f + L.l3)) : ipv4_json(Ipv4View(f + L.l3));
  if (L.l4 != 0) j["udp"] = udp_json(UdpView(f + L.l4));
  if (L.bth != 0) j["bth"] = bth_json(BthView(f + L.bth));
}

void print(const Json& j) { std::puts(j.dump().c_str()); }

class JsonFormatter : public Formatter {
 public:
  void packet(const Record& r) override {
    const bool valid = r.error == ParseError::ok;
    Json j = {{"type", "packet"}, {"frame", r.frame}, {"verdict", valid ? "valid" : "invalid"}};
    j["error"] = valid ? Json(nullptr) : Json(to_string(r.error));
    if (!valid) j["reason"] = describe(r.error);
    j["frame_len"] = r.bytes.size();
    add_layers(j, r);
    if (r.parsed) {
      j["ext"] = ext_json(r.view);
      j["payload_len"] = r.view.payload_len;
      j["icrc"] = {{"wire", hex(r.view.icrc_wire, 8)}};
    }
    if (r.icrc_checked) {
      j["icrc"]["computed"] = hex(r.view.icrc_calc, 8);
      j["icrc"]["ok"] = r.view.icrc_calc == r.view.icrc_wire;
    }
    print(j);
  }

  void other(const Record& r) override {
    Json j = {{"type", "other"}, {"frame", r.frame}, {"frame_len", r.bytes.size()}};
    add_layers(j, r);
    print(j);
  }

  void summary(const Summary& m) override {
    Json errors = Json::object();
    for (const auto& [e, n] : m.errors) errors[to_string(e)] = n;
    Json j = {{"type", "summary"},  {"file", m.file},       {"packets_read", m.frames},
              {"rocev2_packets", m.roce}, {"valid", m.valid}, {"invalid", m.invalid},
              {"errors", errors},   {"other_frames", m.other}};
    j["pmtu"] = m.pmtu != 0 ? Json(m.pmtu) : Json(nullptr);
    if (m.roce == 0) j["note"] = "no RoCEv2 (UDP port 4791) packets in this capture";
    print(j);
  }
};

}  // namespace

std::unique_ptr<Formatter> make_json_formatter() { return std::make_unique<JsonFormatter>(); }

}  // namespace uroce::dump
