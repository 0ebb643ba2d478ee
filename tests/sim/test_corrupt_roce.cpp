// SPDX-License-Identifier: BSD-3-Clause
// A corrupted RoCEv2 frame must not pass the receiver's checks.
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>

#include "sim_test_util.h"
#include "uroce/wire/builder.h"
#include "uroce/wire/opcode.h"
#include "uroce/wire/parser.h"

using namespace uroce;
using namespace uroce::test;

namespace {

std::vector<uint8_t> roce_frame(uint32_t psn, wire::FrameLayout& layout) {
  wire::PacketFields f;
  f.eth.dst = mac(2);
  f.eth.src = mac(1);
  wire::IpAddr::parse("10.0.0.1", f.ip.src);
  wire::IpAddr::parse("10.0.0.2", f.ip.dst);
  f.bth.opcode = wire::op::RC_SEND_ONLY;
  f.bth.dest_qp = 0x12;
  f.bth.psn = psn;
  f.payload_len = 256;
  std::vector<uint8_t> payload(f.payload_len);
  for (size_t i = 0; i < payload.size(); ++i) payload[i] = uint8_t(i + psn);
  std::vector<uint8_t> out(wire::kMaxHeaderLen + f.payload_len + 8);
  REQUIRE(wire::build_frame(f, payload, out, layout) == wire::BuildError::ok);
  out.resize(layout.frame_len);
  return out;
}

size_t first_difference(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b) {
  return size_t(std::mismatch(a.begin(), a.end(), b.begin()).first - a.begin());
}

}  // namespace

TEST_CASE("a corrupted RoCEv2 frame fails parse_mbuf", "[faults]") {
  TestPool pool;
  sim::VirtualClock clock;
  sim::SimWire wire(clock, 777);
  auto& a = wire.add_port(mac(1));
  auto& b = wire.add_port(mac(2));
  sim::LinkFaults f;
  f.corrupt = 1.0;
  wire.set_faults(f);

  const uint32_t n = 2'000;
  std::vector<std::vector<uint8_t>> sent;
  wire::FrameLayout layout;
  for (uint32_t i = 0; i < n; ++i) sent.push_back(roce_frame(i, layout));
  // Fields that RoCEv2 leaves unprotected (reference.md, ICRC): the ICRC
  // masks them and, unlike TOS/TTL, no IPv4 header checksum covers them.
  // FECN/BECN are meant to change in flight; parse_mbuf does not check the
  // UDP checksum.
  const std::vector<size_t> unprotected = {layout.l4_off + 6u, layout.l4_off + 7u, layout.bth_off + 4u};

  std::map<wire::ParseError, uint32_t> verdicts;
  uint32_t unprotected_hits = 0;
  rte_mbuf* m = nullptr;
  for (uint32_t i = 0; i < n; ++i) {
    rte_mbuf* out = mbuf_from_bytes(pool.get(), sent[i]);
    a.tx_burst(&out, 1);
    clock.advance_to(wire.next_delivery_ns());
    REQUIRE(b.rx_burst(&m, 1) == 1);
    wire::PacketView v;
    wire::HeaderScratch scratch;
    const wire::ParseError e = wire::parse_mbuf(m, v, scratch);
    const size_t off = first_difference(sent[i], mbuf_bytes(m));
    rte_pktmbuf_free(m);
    REQUIRE(off < sent[i].size());
    ++verdicts[e];
    if (std::find(unprotected.begin(), unprotected.end(), off) != unprotected.end()) {
      ++unprotected_hits;
      continue;
    }
    INFO("flipped byte " << off << " of " << sent[i].size());
    CHECK(e != wire::ParseError::ok);
  }
  // The frames themselves are fine: only the flip makes them fail.
  {
    rte_mbuf* clean = mbuf_from_bytes(pool.get(), sent[0]);
    wire::PacketView v;
    wire::HeaderScratch scratch;
    CHECK(wire::parse_mbuf(clean, v, scratch) == wire::ParseError::ok);
    rte_pktmbuf_free(clean);
  }
  CHECK(verdicts[wire::ParseError::icrc] > n / 2);
  CHECK(verdicts[wire::ParseError::ipv4_checksum] > 0);
  CHECK(verdicts[wire::ParseError::ok] <= unprotected_hits);
  CHECK(pool.avail() == pool.size());
}
