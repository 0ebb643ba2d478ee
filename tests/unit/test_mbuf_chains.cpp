// SPDX-License-Identifier: BSD-3-Clause
// parse_mbuf() on segmented frames gives the verdict and fields that
// parse_frame() gives on the same bytes, wherever the segments are cut.
#include <vector>

#include "catch_printers.h"
#include "mbuf_chain.h"
#include "robustness_frames.h"
#include "test_support.h"
#include "uroce/wire/builder.h"
#include "uroce/wire/icrc.h"
#include "uroce/wire/parser.h"

using namespace uroce::wire;

namespace {

struct Reference {
  ParseError verdict;
  PacketView view;
};

Reference parse_contiguous(const std::vector<uint8_t>& frame) {
  Reference r;
  r.verdict = parse_frame(frame, r.view);
  return r;
}

void check_chain(const std::vector<uint8_t>& frame, const std::vector<size_t>& cuts, const Reference& ref) {
  uroce::test::MbufChain chain(frame, cuts);
  PacketView v;
  HeaderScratch scratch;
  const ParseError e = parse_mbuf(chain.head(), v, scratch);
  REQUIRE(e == ref.verdict);
  if (e != ParseError::ok) return;
  CHECK(decode_fields(v) == decode_fields(ref.view));
  CHECK(v.payload_off == ref.view.payload_off);
  CHECK(v.payload_len == ref.view.payload_len);
  CHECK(v.pad == ref.view.pad);
  CHECK(v.icrc_wire == ref.view.icrc_wire);
  CHECK(v.mbuf == chain.head());
  CHECK(std::equal(frame.begin(), frame.begin() + v.payload_off, v.headers));
  // The view offers a payload pointer only when payload and pad (the bytes
  // the ICRC covers after the headers) lie in the first segment.
  const size_t first_len = cuts.empty() ? frame.size() : cuts[0];
  const bool contiguous = first_len >= size_t(v.payload_off) + v.payload_len + v.pad;
  CHECK((v.payload != nullptr) == contiguous);
  if (v.payload != nullptr) CHECK(std::equal(v.payload, v.payload + v.payload_len, frame.begin() + v.payload_off));
  // ... and it points into the mbuf itself, never into the header scratch
  // (which the caller reuses for the next packet).
  if (v.payload != nullptr) CHECK(v.payload == rte_pktmbuf_mtod(chain.head(), const uint8_t*) + v.payload_off);
}

// Interesting first cuts for the 3-segment chains: header boundaries, the
// bytes around them, and inside the ICRC.
std::vector<size_t> first_cuts(const PacketView& v) {
  std::vector<size_t> c = {0,
                           1,
                           13,
                           v.l3_off + 1u,
                           v.l4_off - 1u,
                           v.l4_off + 3u,
                           v.bth_off + 5u,
                           v.payload_off - 1u,
                           v.payload_off,
                           v.payload_off + 1u,
                           v.end_off - 3u};
  return c;
}

}  // namespace

TEST_CASE("a single-segment mbuf parses like the contiguous frame", "[mbuf]") {
  for (const auto& nf : uroce::test::robustness_frames()) {
    INFO(nf.name);
    const Reference ref = parse_contiguous(nf.bytes);
    REQUIRE(ref.verdict == ParseError::ok);
    check_chain(nf.bytes, {}, ref);
  }
}

TEST_CASE("two segments cut at every offset", "[mbuf]") {
  for (const auto& nf : uroce::test::robustness_frames()) {
    INFO(nf.name);
    const Reference ref = parse_contiguous(nf.bytes);
    REQUIRE(ref.verdict == ParseError::ok);
    for (size_t cut = 0; cut <= nf.bytes.size(); ++cut) {
      INFO("cut " << cut);
      check_chain(nf.bytes, {cut}, ref);
    }
  }
}

TEST_CASE("three segments with the first cut at header boundaries", "[mbuf]") {
  for (const auto& nf : uroce::test::robustness_frames()) {
    INFO(nf.name);
    const Reference ref = parse_contiguous(nf.bytes);
    REQUIRE(ref.verdict == ParseError::ok);
    for (size_t a : first_cuts(ref.view))
      for (size_t b = a; b <= nf.bytes.size(); ++b) {
        INFO("cuts " << a << ", " << b);
        check_chain(nf.bytes, {a, b}, ref);
      }
  }
}

TEST_CASE("damaged frames get the same verdict segmented", "[mbuf]") {
  for (const auto& nf : uroce::test::robustness_frames()) {
    INFO(nf.name);
    PacketView v;
    REQUIRE(parse_frame(nf.bytes, v) == ParseError::ok);
    // A payload/pad byte, a PSN byte and an ICRC byte: all ICRC errors.
    for (size_t off : {size_t(v.end_off - 5), size_t(v.bth_off + 11), size_t(v.end_off - 1)}) {
      auto bad = nf.bytes;
      bad[off] ^= 0x20;
      const Reference ref = parse_contiguous(bad);
      REQUIRE(ref.verdict == ParseError::icrc);
      for (size_t cut = 0; cut <= bad.size(); cut += 3) {
        INFO("offset " << off << " cut " << cut);
        check_chain(bad, {cut}, ref);
      }
    }
  }
}

TEST_CASE("a chain shorter than its pkt_len is truncated", "[mbuf]") {
  for (const auto& nf : uroce::test::robustness_frames()) {
    INFO(nf.name);
    for (size_t keep : {size_t(10), size_t(60), nf.bytes.size() - 1}) {
      INFO("keep " << keep);
      const std::vector<uint8_t> head(nf.bytes.begin(), nf.bytes.begin() + long(keep));
      for (size_t cut : {keep / 2, keep}) {
        uroce::test::MbufChain chain(head, {cut});
        chain.head()->pkt_len = uint32_t(nf.bytes.size());  // claims the whole frame
        PacketView v;
        HeaderScratch scratch;
        CHECK(parse_mbuf(chain.head(), v, scratch) != ParseError::ok);
      }
    }
  }
}

TEST_CASE("small payloads hashed with the headers give the ICRC hashed piece by piece", "[mbuf]") {
  // build_frame and a one-segment parse_mbuf hash a payload of up to
  // kIcrcSmallBody bytes in the headers' CRC call; parse_frame, a split
  // chain and compute_icrc with the payload elsewhere hash it separately.
  for (bool ipv6 : {false, true})
    for (uint32_t len = 0; len <= kIcrcSmallBody + 5; ++len) {
      INFO("ipv6 " << ipv6 << " len " << len);
      const PacketFields f = uroce::test::sample_fields(op::RC_RDMA_WRITE_ONLY, ipv6, false, len);
      const auto payload = uroce::test::pattern_bytes(len, uint8_t(len));
      auto frame = uroce::test::build_or_throw(f, payload);
      std::vector<uint8_t> hdr(kMaxHeaderLen);
      FrameLayout lay;
      REQUIRE(build_headers(f, hdr, lay) == BuildError::ok);
      const std::span<const uint8_t> apart[] = {payload};
      CHECK(compute_icrc(hdr.data(), lay, apart) == load_le32(frame.data() + frame.size() - 4));
      const Reference ref = parse_contiguous(frame);
      REQUIRE(ref.verdict == ParseError::ok);
      check_chain(frame, {}, ref);
      check_chain(frame, {size_t(ref.view.payload_off)}, ref);
      if (len == 0) continue;
      frame[ref.view.payload_off + len - 1] ^= 0x40;  // the body's last byte counts
      uroce::test::MbufChain chain(frame, {});
      PacketView v;
      HeaderScratch scratch;
      CHECK(parse_mbuf(chain.head(), v, scratch) == ParseError::icrc);
    }
}

TEST_CASE("the UDP checksum gets the same verdict in segments cut anywhere", "[mbuf]") {
  // Segments that start at an odd offset of the datagram add their sum
  // byte-swapped; a cut at every offset tries both parities everywhere.
  ParseOptions strict;
  strict.verify_udp_checksum = true;
  BuildOptions with_sum;
  with_sum.compute_udp_checksum = true;
  for (bool ipv6 : {false, true}) {
    for (int damage = 0; damage < 3; ++damage) {
      DYNAMIC_SECTION((ipv6 ? "IPv6" : "IPv4") << " damage " << damage) {
        const PacketFields f = uroce::test::sample_fields(op::RC_SEND_ONLY, ipv6, false, 301);
        std::vector<uint8_t> payload(301);
        for (size_t i = 0; i < payload.size(); ++i) payload[i] = uint8_t(i * 31 + 5);
        std::vector<uint8_t> frame(600);
        FrameLayout lay;
        REQUIRE(build_frame(f, payload, frame, lay, with_sum) == BuildError::ok);
        frame.resize(lay.frame_len);
        // 1: the checksum field off by one; 2: a payload byte changed and
        // the ICRC redone, so only the UDP checksum can tell.
        if (damage == 1) frame[lay.l4_off + 7] ^= 1;
        if (damage == 2) {
          payload[100] ^= 0x40;
          std::vector<uint8_t> redone(600);
          FrameLayout lay2;
          PacketFields g = f;
          REQUIRE(build_frame(g, payload, redone, lay2) == BuildError::ok);
          std::copy(redone.begin() + lay.payload_off, redone.begin() + lay.frame_len, frame.begin() + lay.payload_off);
        }
        PacketView ref;
        const ParseError want = parse_frame(frame, ref, strict);
        CHECK(want == (damage == 0 ? ParseError::ok : ParseError::udp_checksum));
        for (size_t cut = 1; cut < frame.size(); ++cut) {
          uroce::test::MbufChain chain(frame, {cut, std::min(frame.size(), cut + 7)});
          PacketView v;
          HeaderScratch scratch;
          INFO("cut at " << cut);
          CHECK(parse_mbuf(chain.head(), v, scratch, strict) == want);
        }
      }
    }
  }
}
