// SPDX-License-Identifier: BSD-3-Clause
// build_frame() (headers, payload copy, ICRC) and build_headers() alone.
// The timed output must parse back to the input fields.
#include <algorithm>

#include "bench.h"
#include "sample_frames.h"
#include "uroce/wire/parser.h"

using namespace uroce;

namespace {

void bench_build(const char* name, const bench::SampleFrame& s) {
  std::vector<uint8_t> out(wire::kMaxHeaderLen + s.payload.size() + 8);
  wire::FrameLayout layout;
  REQUIRE(wire::build_frame(s.fields, s.payload, out, layout) == wire::BuildError::ok);
  wire::PacketView v;
  REQUIRE(wire::parse_frame({out.data(), layout.frame_len}, v) == wire::ParseError::ok);
  REQUIRE(wire::decode_fields(v) == s.fields);
  BENCHMARK(name) {
    wire::FrameLayout l;
    return unsigned(wire::build_frame(s.fields, s.payload, out, l)) + l.frame_len;
  };
}

}  // namespace

TEST_CASE("build_frame", "[bench][build]") {
  bench_build("build_frame SEND ONLY 64 B +ICRC", bench::make_send_only(64));
  bench_build("build_frame WRITE MIDDLE 4096 B +ICRC", bench::make_write_middle(4096));
}

TEST_CASE("build_headers", "[bench][build]") {
  const bench::SampleFrame s = bench::make_send_only(64);
  REQUIRE_FALSE(s.bytes.empty());
  uint8_t out[wire::kMaxHeaderLen];
  wire::FrameLayout layout;
  REQUIRE(wire::build_headers(s.fields, out, layout) == wire::BuildError::ok);
  // The headers are the first payload_off bytes of the complete frame.
  REQUIRE(std::equal(out, out + layout.payload_off, s.bytes.begin()));
  BENCHMARK("build_headers SEND ONLY") {
    wire::FrameLayout l;
    return unsigned(wire::build_headers(s.fields, out, l)) + l.payload_off;
  };
}
