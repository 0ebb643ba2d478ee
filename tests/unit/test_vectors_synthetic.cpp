// SPDX-License-Identifier: BSD-3-Clause
// The oracle's synthetic vectors: every positive frame decodes to exactly
// the fields the oracle (Scapy + tshark) recorded, and every defective
// frame is rejected with the oracle's error code.
#include <algorithm>
#include <set>
#include <string>

#include "catch_printers.h"
#include "synthetic_vectors.h"
#include "test_support.h"
#include "uroce/wire/icrc.h"
#include "uroce/wire/parser.h"

using namespace uroce::wire;
using nlohmann::json;
using uroce::test::json_uint;

namespace {

const json& vectors(const char* file) { return uroce::test::synthetic_doc(file).at("vectors"); }

IpAddr ip_of(const json& j) {
  IpAddr a;
  REQUIRE(IpAddr::parse(j.get<std::string>(), a));
  return a;
}

MacAddr mac_of(const json& j) {
  MacAddr m;
  REQUIRE(MacAddr::parse(j.get<std::string>(), m));
  return m;
}

void check_eth(const json& j, const PacketFields& f) {
  CHECK(f.eth.dst == mac_of(j.at("dst")));
  CHECK(f.eth.src == mac_of(j.at("src")));
  CHECK(f.eth.dst.to_string() == j.at("dst").get<std::string>());
  const bool tagged = j.contains("vlans");
  CHECK(f.eth.has_vlan == tagged);
  if (!tagged) return;
  const json& tag = j.at("vlans").at(0);
  const uint64_t tci = json_uint(tag.at("pcp")) << 13 | json_uint(tag.at("dei")) << 12 | json_uint(tag.at("vid"));
  CHECK(f.eth.vlan_tci == tci);
}

void check_ip(const json& j, const PacketView& v, const IpFields& ip) {
  const bool v6 = json_uint(j.at("version")) == 6;
  CHECK(ip.ipv6 == v6);
  CHECK(ip.dscp == json_uint(j.at("dscp")));
  CHECK(ip.ecn == json_uint(j.at("ecn")));
  CHECK(ip.src == ip_of(j.at("src")));
  CHECK(ip.dst == ip_of(j.at("dst")));
  if (v6) {
    CHECK(ip.ttl == json_uint(j.at("hop_limit")));
    CHECK(ip.flow_label == json_uint(j.at("flow_label")));
    CHECK(uint64_t(ip.dscp << 2 | ip.ecn) == json_uint(j.at("traffic_class")));
    CHECK(v.ipv6_hdr().payload_len() == json_uint(j.at("payload_length")));
    CHECK(ip.id == 0);
    CHECK_FALSE(ip.df);
  } else {
    CHECK(ip.ttl == json_uint(j.at("ttl")));
    CHECK(ip.id == json_uint(j.at("id")));
    CHECK(ip.df == (json_uint(j.at("df")) == 1));
    CHECK(ip.flow_label == 0);
    CHECK(v.ipv4().checksum() == json_uint(j.at("checksum")));
    CHECK(v.ipv4().total_len() == json_uint(j.at("total_length")));
    CHECK(v.ipv4().header_len() == json_uint(j.at("ihl")));
  }
}

void check_udp(const json& j, const PacketView& v, const UdpFields& u) {
  CHECK(u.sport == json_uint(j.at("sport")));
  CHECK(u.dport == json_uint(j.at("dport")));
  CHECK(u.checksum == json_uint(j.at("checksum")));
  CHECK(v.udp().length() == json_uint(j.at("length")));
}

void check_bth(const json& j, const PacketView& v, const BthFields& b) {
  CHECK(b.opcode == json_uint(j.at("opcode")));
  CHECK(std::string(v.op->name) == j.at("opcode_name").get<std::string>());
  CHECK(b.se == (json_uint(j.at("se")) == 1));
  CHECK(b.migreq == (json_uint(j.at("migreq")) == 1));
  CHECK(v.pad == json_uint(j.at("padcount")));
  CHECK(b.tver == json_uint(j.at("tver")));
  CHECK(b.pkey == json_uint(j.at("pkey")));
  CHECK(b.fecn == (json_uint(j.at("fecn")) == 1));
  CHECK(b.becn == (json_uint(j.at("becn")) == 1));
  CHECK(b.resv6 == json_uint(j.at("resv6")));
  // resv8a is the oracle's name for the whole byte 4.
  CHECK((uint32_t(b.fecn) << 7 | uint32_t(b.becn) << 6 | b.resv6) == json_uint(j.at("resv8a")));
  CHECK(b.dest_qp == json_uint(j.at("dest_qp")));
  CHECK(b.ack_req == (json_uint(j.at("ackreq")) == 1));
  CHECK(b.resv7 == json_uint(j.at("resv7")));
  CHECK(b.psn == json_uint(j.at("psn")));
}

// The extension fields the JSON lists; everything else must decode as 0.
ExtFields ext_from_json(const json& j) {
  ExtFields x;
  auto get = [&](const char* hdr, const char* field) { return json_uint(j.at(hdr).at(field)); };
  if (j.contains("RETH")) {
    x.reth_va = get("RETH", "va");
    x.reth_rkey = uint32_t(get("RETH", "rkey"));
    x.reth_dma_len = uint32_t(get("RETH", "dma_len"));
  }
  if (j.contains("AETH")) {
    x.aeth_syndrome = uint8_t(get("AETH", "syndrome"));
    x.aeth_msn = uint32_t(get("AETH", "msn"));
  }
  if (j.contains("AtomicETH")) {
    x.atomic_va = get("AtomicETH", "va");
    x.atomic_rkey = uint32_t(get("AtomicETH", "rkey"));
    x.atomic_swap_add = get("AtomicETH", "swap_add");
    x.atomic_compare = get("AtomicETH", "compare");
  }
  if (j.contains("AtomicAckETH")) x.atomic_ack_orig = get("AtomicAckETH", "orig_remote_data");
  if (j.contains("ImmDt")) x.imm = uint32_t(get("ImmDt", "imm"));
  if (j.contains("IETH")) x.ieth_rkey = uint32_t(get("IETH", "rkey"));
  if (j.contains("DETH")) {
    x.deth_qkey = uint32_t(get("DETH", "qkey"));
    x.deth_src_qp = uint32_t(get("DETH", "src_qp"));
  }
  return x;
}

void check_ext(const json& j, const PacketView& v, const ExtFields& x) {
  const std::pair<const char*, Ext> names[] = {{"RETH", Ext::reth},           {"AETH", Ext::aeth},
                                               {"AtomicETH", Ext::atomic_eth}, {"AtomicAckETH", Ext::atomic_ack_eth},
                                               {"ImmDt", Ext::imm_dt},        {"IETH", Ext::ieth},
                                               {"DETH", Ext::deth}};
  for (auto [name, e] : names) {
    INFO("extension header " << name);
    CHECK(v.op->has_ext(e) == j.contains(name));
  }
  CHECK(x == ext_from_json(j));
}

// The oracle counts a CNP's 16 reserved bytes as payload; the library
// treats them as the CNP's extension header (Annex A17 says reserved).
uint32_t reserved_as_payload(const json& vec) { return json_uint(vec.at("bth").at("opcode")) == 0x81 ? 16 : 0; }

uint64_t oracle_payload_len(const json& vec) { return json_uint(vec.at("payload_len")) - reserved_as_payload(vec); }

void check_offsets(const json& vec, const PacketView& v) {
  const json& o = vec.at("offsets");
  CHECK(v.l3_off == json_uint(o.at("l3")));
  CHECK(v.l4_off == json_uint(o.at("udp")));
  CHECK(v.bth_off == json_uint(o.at("bth")));
  CHECK(v.bth_off + 12u == json_uint(o.at("ext")));
  CHECK(v.payload_off == json_uint(o.at("payload")) + reserved_as_payload(vec));
  CHECK(v.payload_off + v.payload_len == json_uint(o.at("pad")));
  CHECK(v.end_off - 4 == json_uint(o.at("icrc")));
  CHECK(v.frame_len == json_uint(vec.at("frame_len")));
}

void check_payload_and_icrc(const json& vec, const std::vector<uint8_t>& frame, const PacketView& v) {
  const auto oracle_payload = uroce::test::from_hex(vec.at("payload_hex").get<std::string>());
  const uint32_t reserved = reserved_as_payload(vec);
  REQUIRE(oracle_payload.size() == v.payload_len + reserved);
  CHECK(v.payload_len == oracle_payload_len(vec));
  if (reserved) {
    CHECK(std::equal(oracle_payload.begin(), oracle_payload.begin() + reserved, v.ext(Ext::cnp_reserved)));
    CHECK(std::all_of(oracle_payload.begin(), oracle_payload.end(), [](uint8_t b) { return b == 0; }));
  }
  CHECK(std::equal(oracle_payload.begin() + reserved, oracle_payload.end(), v.payload));
  const json& icrc = vec.at("icrc");
  const uint32_t crc = uint32_t(json_uint(icrc.at("crc32")));
  CHECK(v.icrc_wire == crc);
  CHECK(v.icrc_calc == crc);
  const auto wire = uroce::test::from_hex(icrc.at("wire_hex").get<std::string>());
  CHECK(std::equal(wire.begin(), wire.end(), frame.begin() + v.end_off - 4));
}

// The library's masked-header CRC equals zlib over the oracle's masked bytes
// up to the end of the BTH.
void check_masked_headers(const json& vec, const std::vector<uint8_t>& frame, const PacketView& v) {
  const auto input = uroce::test::from_hex(vec.at("icrc_input_hex").get<std::string>());
  const size_t through_bth = 8 + (v.bth_off + 12u - v.l3_off);
  REQUIRE(input.size() == 8 + (v.end_off - 4 - v.l3_off));
  const uint32_t lib = icrc_masked_headers(frame.data() + v.l3_off, v.l4_off - v.l3_off, v.ipv6);
  CHECK(lib == crc32_with(CrcImpl::zlib, 0, input.data(), through_bth));
}

uint32_t pmtu_of(const json& vec) { return vec.contains("pmtu") ? uint32_t(json_uint(vec.at("pmtu"))) : 0; }

void check_positive(const json& vec) {
  const auto frame = uroce::test::vector_frame(vec);
  PacketView v;
  REQUIRE(parse_frame(frame, v) == ParseError::ok);
  CHECK(check_semantics(v, pmtu_of(vec)) == ParseError::ok);
  const PacketFields f = decode_fields(v);
  check_eth(vec.at("eth"), f);
  check_ip(vec.at("ip"), v, f.ip);
  check_udp(vec.at("udp"), v, f.udp);
  check_bth(vec.at("bth"), v, f.bth);
  check_ext(vec.at("ext"), v, f.ext);
  CHECK(f.payload_len == oracle_payload_len(vec));
  check_offsets(vec, v);
  check_payload_and_icrc(vec, frame, v);
  check_masked_headers(vec, frame, v);
}

std::string first_expected_error(const json& vec) {
  for (const auto& e : vec.at("expected_errors"))
    if (e.get<std::string>() != "tshark_malformed") return e.get<std::string>();
  return "";
}

void check_pcap_matches_json(const char* json_file, const char* pcap_file) {
  const auto frames = uroce::test::read_pcap(uroce::test::data_path(std::string("synthetic/") + pcap_file));
  const json& vecs = vectors(json_file);
  REQUIRE(frames.size() == vecs.size());
  for (size_t i = 0; i < frames.size(); ++i) {
    INFO(vecs[i].at("name").get<std::string>());
    CHECK(frames[i] == uroce::test::vector_frame(vecs[i]));
  }
}

void check_icrc_inputs(const json& vecs) {
  for (const auto& vec : vecs) {
    INFO(vec.at("name").get<std::string>());
    const auto input = uroce::test::from_hex(vec.at("icrc_input_hex").get<std::string>());
    CHECK(crc32(0, input.data(), input.size()) == json_uint(vec.at("icrc").at("crc32")));
  }
}

}  // namespace

TEST_CASE("positive vectors: the pcap holds the JSON's frames", "[synthetic-positive]") {
  check_pcap_matches_json("roce_vectors.json", "roce_vectors.pcap");
}

TEST_CASE("positive vectors decode to the oracle's fields", "[synthetic-positive]") {
  const json& vecs = vectors("roce_vectors.json");
  REQUIRE(vecs.size() == json_uint(uroce::test::synthetic_doc("roce_vectors.json").at("count")));
  for (const auto& vec : vecs) {
    REQUIRE(vec.at("expect").get<std::string>() == "PASS");
    DYNAMIC_SECTION(vec.at("name").get<std::string>()) { check_positive(vec); }
  }
}

TEST_CASE("positive vectors: crc32 of the oracle's masked input is the ICRC", "[synthetic-positive]") {
  check_icrc_inputs(vectors("roce_vectors.json"));
}

TEST_CASE("negative vectors: the pcap holds the JSON's frames", "[synthetic-negative]") {
  check_pcap_matches_json("roce_vectors_negative.json", "roce_vectors_negative.pcap");
}

TEST_CASE("negative vectors: crc32 of the oracle's masked input is the ICRC", "[synthetic-negative]") {
  check_icrc_inputs(vectors("roce_vectors_negative.json"));
}

TEST_CASE("negative vectors fail with the oracle's error", "[synthetic-negative]") {
  const json& vecs = vectors("roce_vectors_negative.json");
  std::set<std::string> codes;
  for (const auto& vec : vecs) {
    DYNAMIC_SECTION(vec.at("name").get<std::string>()) {
      const std::string want = first_expected_error(vec);
      REQUIRE_FALSE(want.empty());
      const auto frame = uroce::test::vector_frame(vec);
      PacketView v;
      ParseError e = parse_frame(frame, v);
      if (e == ParseError::ok) e = check_semantics(v, pmtu_of(vec));
      CHECK(std::string(to_string(e)) == want);
    }
    codes.insert(first_expected_error(vec));
  }
  CHECK(codes.size() >= 10);  // the defects cover most error codes
}
