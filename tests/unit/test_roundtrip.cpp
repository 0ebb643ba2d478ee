// SPDX-License-Identifier: BSD-3-Clause
// build_frame -> parse_frame -> decode_fields gives back every field, for
// every opcode, both IP versions, with and without VLAN, at every path MTU.
#include <random>
#include <vector>

#include "catch_printers.h"
#include "test_support.h"
#include "uroce/wire/builder.h"
#include "uroce/wire/ext_headers.h"
#include "wire/header_template.h"
#include "uroce/wire/ipv4.h"
#include "uroce/wire/parser.h"

using namespace uroce::wire;

namespace {

constexpr uint32_t kPmtus[] = {256, 512, 1024, 2048, 4096};

class Rng {
 public:
  explicit Rng(uint64_t seed) : g_(seed) {}
  uint64_t bits(int n) { return n == 64 ? g_() : g_() & ((uint64_t(1) << n) - 1); }
  bool flip() { return bits(1) != 0; }
  uint32_t range(uint32_t lo, uint32_t hi) { return lo + uint32_t(g_() % (uint64_t(hi) - lo + 1)); }

 private:
  std::mt19937_64 g_;
};

// LAST/ONLY may carry 0..PMTU bytes; FIRST/MIDDLE exactly PMTU.
std::vector<uint32_t> legal_lengths(const OpcodeInfo& op, uint32_t pmtu) {
  if (!op.has(opf::payload)) return {0};
  if (op.is_first() || op.is_middle()) return {pmtu};
  return {0, 1, pmtu - 1, pmtu};
}

IpAddr random_addr(Rng& r, bool ipv6) {
  uint8_t b[16];
  for (auto& x : b) x = uint8_t(r.bits(8));
  return ipv6 ? IpAddr::from_v6(b) : IpAddr::from_v4(b);
}

void randomize_l2_l3(Rng& r, bool ipv6, bool vlan, PacketFields& f) {
  for (auto& b : f.eth.dst.bytes) b = uint8_t(r.bits(8));
  for (auto& b : f.eth.src.bytes) b = uint8_t(r.bits(8));
  f.eth.has_vlan = vlan;
  f.eth.vlan_tci = vlan ? uint16_t(r.bits(16)) : 0;
  f.ip.ipv6 = ipv6;
  f.ip.dscp = uint8_t(r.bits(6));
  f.ip.ecn = uint8_t(r.bits(2));
  f.ip.ttl = uint8_t(r.bits(8));
  f.ip.id = ipv6 ? 0 : uint16_t(r.bits(16));
  f.ip.df = ipv6 ? false : r.flip();
  f.ip.flow_label = ipv6 ? uint32_t(r.bits(20)) : 0;
  f.ip.src = random_addr(r, ipv6);
  f.ip.dst = random_addr(r, ipv6);
  f.udp.sport = uint16_t(r.bits(16));
  f.udp.checksum = uint16_t(r.bits(16));  // written as given, not verified by default
}

void randomize_bth(Rng& r, uint8_t opcode, BthFields& b) {
  b.opcode = opcode;
  b.se = r.flip();
  b.migreq = r.flip();
  b.tver = 0;
  b.pkey = uint16_t(r.bits(16));
  b.fecn = r.flip();
  b.becn = r.flip();
  b.resv6 = uint8_t(r.bits(6));
  b.dest_qp = uint32_t(r.bits(24));
  b.ack_req = r.flip();
  b.resv7 = uint8_t(r.bits(7));
  b.psn = uint32_t(r.bits(24));
}

// An AETH syndrome the opcode may carry: only ACKNOWLEDGE may NAK or RNR-NAK
// (IBA 9.7.5.1); NAK codes 0..4 are defined.
uint8_t legal_syndrome(Rng& r, const OpcodeInfo& op) {
  const uint8_t credits = uint8_t(r.bits(5));
  if (!op.has(opf::ack)) return uint8_t(0x00 | credits);
  switch (r.range(0, 2)) {
    case 0: return uint8_t(0x00 | credits);         // ACK
    case 1: return uint8_t(0x20 | r.bits(5));       // RNR NAK with a timer
    default: return uint8_t(0x60 | r.range(0, 4));  // NAK
  }
}

void randomize_ext(Rng& r, const OpcodeInfo& op, uint32_t len, ExtFields& x) {
  x.reth_va = r.bits(64);
  x.reth_rkey = uint32_t(r.bits(32));
  x.reth_dma_len = uint32_t(r.bits(32));
  // A WRITE ONLY moves exactly its payload; a WRITE FIRST announces more.
  if (op.has(opf::write) && op.is_only()) x.reth_dma_len = len;
  if (op.has(opf::write) && op.is_first()) x.reth_dma_len = len + r.range(1, 1u << 30);
  x.aeth_syndrome = legal_syndrome(r, op);
  x.aeth_msn = uint32_t(r.bits(24));
  x.atomic_va = r.bits(64) & ~uint64_t(7);  // atomics need 8-byte alignment
  x.atomic_rkey = uint32_t(r.bits(32));
  x.atomic_swap_add = r.bits(64);
  x.atomic_compare = r.bits(64);
  x.atomic_ack_orig = r.bits(64);
  x.imm = uint32_t(r.bits(32));
  x.ieth_rkey = uint32_t(r.bits(32));
  x.deth_qkey = uint32_t(r.bits(32));
  x.deth_src_qp = uint32_t(r.bits(24));
}

// decode_fields() leaves the extension fields an opcode does not carry at 0.
ExtFields carried_only(const OpcodeInfo& op, const ExtFields& x) {
  ExtFields out;
  if (op.has_ext(Ext::reth)) {
    out.reth_va = x.reth_va;
    out.reth_rkey = x.reth_rkey;
    out.reth_dma_len = x.reth_dma_len;
  }
  if (op.has_ext(Ext::aeth)) {
    out.aeth_syndrome = x.aeth_syndrome;
    out.aeth_msn = x.aeth_msn;
  }
  if (op.has_ext(Ext::atomic_eth)) {
    out.atomic_va = x.atomic_va;
    out.atomic_rkey = x.atomic_rkey;
    out.atomic_swap_add = x.atomic_swap_add;
    out.atomic_compare = x.atomic_compare;
  }
  if (op.has_ext(Ext::atomic_ack_eth)) out.atomic_ack_orig = x.atomic_ack_orig;
  if (op.has_ext(Ext::imm_dt)) out.imm = x.imm;
  if (op.has_ext(Ext::ieth)) out.ieth_rkey = x.ieth_rkey;
  if (op.has_ext(Ext::deth)) {
    out.deth_qkey = x.deth_qkey;
    out.deth_src_qp = x.deth_src_qp;
  }
  return out;
}

struct Case {
  uint8_t opcode;
  bool ipv6;
  bool vlan;
  uint32_t pmtu;
  uint32_t len;
};

// Expected frame length from the header sizes alone.
uint32_t expected_frame_len(const Case& c, const OpcodeInfo& op) {
  const uint32_t pad = (4 - c.len % 4) % 4;
  return 14 + (c.vlan ? 4 : 0) + (c.ipv6 ? 40 : 20) + 8 + op.header_len + c.len + pad + 4;
}

void check_case(Rng& r, const Case& c) {
  const OpcodeInfo& op = opcode_info(c.opcode);
  INFO("opcode " << op.name << " ipv6 " << c.ipv6 << " vlan " << c.vlan << " pmtu " << c.pmtu << " len "
                 << c.len);
  PacketFields f;
  randomize_l2_l3(r, c.ipv6, c.vlan, f);
  randomize_bth(r, c.opcode, f.bth);
  randomize_ext(r, op, c.len, f.ext);
  f.payload_len = c.len;
  std::vector<uint8_t> payload(c.len);
  for (auto& b : payload) b = uint8_t(r.bits(8));

  const std::vector<uint8_t> frame = uroce::test::build_or_throw(f, payload);
  REQUIRE(frame.size() == expected_frame_len(c, op));
  PacketView v;
  REQUIRE(parse_frame(frame, v) == ParseError::ok);
  CHECK(check_semantics(v, c.pmtu) == ParseError::ok);
  CHECK(v.pad == (4 - c.len % 4) % 4);
  PacketFields want = f;
  want.ext = carried_only(op, f.ext);
  CHECK(decode_fields(v) == want);
  REQUIRE(v.payload_len == c.len);
  CHECK(std::equal(payload.begin(), payload.end(), v.payload));
}

}  // namespace

TEST_CASE("every opcode round-trips at every path MTU", "[roundtrip]") {
  Rng r(0x5EED);
  int cases = 0;
  for (int code = 0; code < 256; ++code) {
    const OpcodeInfo& op = opcode_info(uint8_t(code));
    if (!op.valid()) continue;
    for (bool ipv6 : {false, true})
      for (bool vlan : {false, true})
        for (uint32_t pmtu : kPmtus)
          for (uint32_t len : legal_lengths(op, pmtu)) {
            check_case(r, {uint8_t(code), ipv6, vlan, pmtu, len});
            ++cases;
          }
  }
  CHECK(cases > 38 * 20);
}

TEST_CASE("headers plus a payload hashed in pieces equal build_frame", "[roundtrip]") {
  Rng r(77);
  for (uint8_t code : {op::RC_SEND_ONLY, op::RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE, op::UD_SEND_ONLY_WITH_IMMEDIATE,
                       op::RC_RDMA_READ_RESPONSE_LAST}) {
    for (uint32_t len : {0u, 1u, 333u, 4096u}) {
      INFO("opcode " << int(code) << " len " << len);
      const PacketFields f = uroce::test::sample_fields(code, len % 2 == 1, len == 333, len);
      const auto payload = uroce::test::pattern_bytes(len, uint8_t(code));
      const auto whole = uroce::test::build_or_throw(f, payload);

      std::vector<uint8_t> hdr(kMaxHeaderLen);
      FrameLayout lay;
      REQUIRE(build_headers(f, hdr, lay) == BuildError::ok);
      REQUIRE(lay.frame_len == whole.size());
      CHECK(std::equal(hdr.begin(), hdr.begin() + lay.payload_off, whole.begin()));
      const size_t cut = len == 0 ? 0 : r.range(0, len);
      const std::span<const uint8_t> all(payload);
      const std::span<const uint8_t> pieces[] = {all.first(cut), all.subspan(cut)};
      const uint32_t icrc = compute_icrc(hdr.data(), lay, pieces);
      const uint8_t* wire_icrc = whole.data() + whole.size() - 4;
      // Stored least-significant byte first.
      const uint32_t stored = uint32_t(wire_icrc[0]) | uint32_t(wire_icrc[1]) << 8 |
                              uint32_t(wire_icrc[2]) << 16 | uint32_t(wire_icrc[3]) << 24;
      CHECK(icrc == stored);
    }
  }
}

TEST_CASE("an offloaded IPv4 checksum is left zero and nothing else changes", "[roundtrip]") {
  for (bool ipv6 : {false, true})
    for (bool vlan : {false, true}) {
      INFO("ipv6 " << ipv6 << " vlan " << vlan);
      const PacketFields f = uroce::test::sample_fields(op::RC_RDMA_WRITE_FIRST, ipv6, vlan, 64);
      std::vector<uint8_t> soft(kMaxHeaderLen), off(kMaxHeaderLen);
      FrameLayout ls, lo;
      REQUIRE(build_headers(f, soft, ls) == BuildError::ok);
      REQUIRE(build_headers(f, off, lo, Ipv4Checksum::offloaded) == BuildError::ok);
      REQUIRE(lo.payload_off == ls.payload_off);
      if (!ipv6) {
        const size_t at = ls.l3_off + 10;  // the header checksum
        CHECK(off[at] == 0);
        CHECK(off[at + 1] == 0);
        CHECK((soft[at] | soft[at + 1]) != 0);
        CHECK(ipv4_header_checksum(soft.data() + ls.l3_off, kIpv4MinHeaderLen) == 0);
        off[at] = soft[at];
        off[at + 1] = soft[at + 1];
      }
      CHECK(off == soft);  // IPv6 has no header checksum: identical
    }
}

TEST_CASE("a header template writes what build_headers writes, for every opcode and layout", "[roundtrip]") {
  Rng r(4242);
  for (int code = 0; code < 256; ++code) {
    const OpcodeInfo& op = opcode_info(uint8_t(code));
    if (!op.valid()) continue;
    for (bool ipv6 : {false, true})
      for (bool vlan : {false, true})
        for (Ipv4Checksum csum : {Ipv4Checksum::compute, Ipv4Checksum::offloaded})
          for (uint32_t len : legal_lengths(op, 1024)) {
            INFO("opcode " << op.name << " ipv6 " << ipv6 << " vlan " << vlan << " offloaded "
                           << (csum == Ipv4Checksum::offloaded) << " len " << len);
            PacketFields f;
            randomize_l2_l3(r, ipv6, vlan, f);
            randomize_bth(r, uint8_t(code), f.bth);
            randomize_ext(r, op, len, f.ext);
            f.payload_len = len;
            // Prepared from the connection's fields with other per-packet
            // values than the packet's, to show those are not kept.
            PacketFields shared = f;
            shared.bth.opcode = op::RC_RDMA_READ_REQUEST;
            shared.bth.psn = f.bth.psn ^ 0x5A5A5A;
            shared.bth.se = !f.bth.se;
            shared.bth.ack_req = !f.bth.ack_req;
            shared.payload_len = 7;
            HeaderTemplate t;
            REQUIRE(t.prepare(shared, csum) == BuildError::ok);
            // Both outputs start as different garbage: every header byte must be written.
            std::vector<uint8_t> want(256, 0xA5), got(256, 0x5A);
            FrameLayout lw, lg;
            REQUIRE(build_headers(f, want, lw, csum) == BuildError::ok);
            const PacketSpec p{f.bth.opcode, f.bth.psn, len, f.bth.ack_req, f.bth.se};
            REQUIRE(t.write(p, f.ext, got, lg) == BuildError::ok);
            CHECK(lg.l3_off == lw.l3_off);
            CHECK(lg.l4_off == lw.l4_off);
            CHECK(lg.bth_off == lw.bth_off);
            CHECK(lg.payload_off == lw.payload_off);
            CHECK(lg.payload_len == lw.payload_len);
            CHECK(lg.pad == lw.pad);
            CHECK(lg.ipv6 == lw.ipv6);
            CHECK(lg.frame_len == lw.frame_len);
            CHECK(std::equal(want.begin(), want.begin() + lw.payload_off, got.begin()));
            // A short output buffer gets only the headers, or an error.
            std::vector<uint8_t> tight(lw.payload_off, 0x11);
            CHECK(t.write(p, f.ext, tight, lg) == BuildError::ok);
            CHECK(std::equal(want.begin(), want.begin() + lw.payload_off, tight.begin()));
            std::vector<uint8_t> small(lw.payload_off - 1);
            CHECK(t.write(p, f.ext, small, lg) == BuildError::no_room);
          }
  }
  HeaderTemplate unprepared;
  std::vector<uint8_t> out(256);
  FrameLayout lay;
  CHECK(unprepared.write(PacketSpec{op::RC_SEND_ONLY}, ExtFields{}, out, lay) != BuildError::ok);
}
