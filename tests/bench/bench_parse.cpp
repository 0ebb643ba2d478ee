// SPDX-License-Identifier: BSD-3-Clause
// parse_frame() with and without the ICRC check. Every frame must parse
// and decode back to the fields it was built from before it is timed.
#include "bench.h"
#include "sample_frames.h"
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

}  // namespace

TEST_CASE("parse_frame", "[bench][parse]") {
  bench_parse("parse ACK (headers only)", bench::make_ack());
  bench_parse("parse SEND ONLY 64 B", bench::make_send_only(64));
  bench_parse("parse WRITE MIDDLE 4096 B", bench::make_write_middle(4096));
}
