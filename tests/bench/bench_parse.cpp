// SPDX-License-Identifier: BSD-3-Clause
// parse_frame() with and without the ICRC check. Every frame must parse
// and decode back to the fields it was built from before it is timed.
#include <rte_mbuf.h>

#include <cstring>
#include <memory>

#include "bench.h"
#include "sample_frames.h"
#include "uroce/wire/builder.h"
#include "uroce/wire/parser.h"

using namespace uroce;

namespace {

void bench_parse(const char* name, const bench::SampleFrame& s) {
  REQUIRE_FALSE(s.bytes.empty());
  const std::span<const uint8_t> frame(s.bytes);
  for (bool icrc : {true, false}) {
    wire::ParseOptions opts;
    opts.verify_icrc = icrc;
    wire::PacketView v;
    REQUIRE(wire::parse_frame(frame, v, opts) == wire::ParseError::ok);
    REQUIRE(wire::decode_fields(v) == s.fields);
    const std::string label = std::string(name) + (icrc ? " +ICRC" : " no ICRC");
    BENCHMARK(label.c_str()) {
      wire::PacketView pv;
      return unsigned(wire::parse_frame(frame, pv, opts)) + pv.payload_len;
    };
  }
}

// What the engine's receive path pays for the UDP checksum on a 4096-byte
// payload: none sent (zero, what uroce and rxe send), checked in software,
// or taken from the port's RTE_MBUF_F_RX_L4_CKSUM_GOOD.
void bench_udp_checksum() {
  const bench::SampleFrame s = bench::make_write_middle(4096);
  struct PoolFree {
    void operator()(rte_mempool* p) const { rte_mempool_free(p); }
  };
  std::unique_ptr<rte_mempool, PoolFree> pool(rte_pktmbuf_pool_create("bench_csum", 7, 0, 0, 8192, SOCKET_ID_ANY));
  REQUIRE(pool != nullptr);
  std::vector<uint8_t> summed(s.bytes.size() + 64);
  wire::FrameLayout lay;
  wire::BuildOptions with_sum;
  with_sum.compute_udp_checksum = true;
  REQUIRE(wire::build_frame(s.fields, s.payload, summed, lay, with_sum) == wire::BuildError::ok);
  summed.resize(lay.frame_len);
  struct Case {
    const char* label;
    const std::vector<uint8_t>* bytes;
    uint64_t flags;
  };
  const Case cases[] = {
      {"parse_mbuf WRITE MIDDLE 4096 B, UDP checksum zero", &s.bytes, 0},
      {"parse_mbuf WRITE MIDDLE 4096 B, UDP checksum in software", &summed, 0},
      {"parse_mbuf WRITE MIDDLE 4096 B, UDP checksum GOOD from the port", &summed, RTE_MBUF_F_RX_L4_CKSUM_GOOD},
  };
  wire::ParseOptions opts;
  opts.verify_udp_checksum = true;
  for (const Case& c : cases) {
    rte_mbuf* m = rte_pktmbuf_alloc(pool.get());
    REQUIRE(m != nullptr);
    std::memcpy(rte_pktmbuf_append(m, uint16_t(c.bytes->size())), c.bytes->data(), c.bytes->size());
    m->ol_flags |= c.flags;
    wire::HeaderScratch scratch;
    wire::PacketView v;
    REQUIRE(wire::parse_mbuf(m, v, scratch, opts) == wire::ParseError::ok);
    BENCHMARK(c.label) {
      wire::PacketView pv;
      return unsigned(wire::parse_mbuf(m, pv, scratch, opts)) + pv.payload_len;
    };
    rte_pktmbuf_free(m);
  }
}

}  // namespace

TEST_CASE("parse_mbuf and the UDP checksum", "[bench][parse]") { bench_udp_checksum(); }

TEST_CASE("parse_frame", "[bench][parse]") {
  bench_parse("parse ACK (headers only)", bench::make_ack());
  bench_parse("parse SEND ONLY 64 B", bench::make_send_only(64));
  bench_parse("parse WRITE MIDDLE 4096 B", bench::make_write_middle(4096));
}
