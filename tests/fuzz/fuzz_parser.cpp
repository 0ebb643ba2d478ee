// SPDX-License-Identifier: BSD-3-Clause
// libFuzzer target for the frame parser.
//
// Beyond "no crash, no over-read, no UB" it checks properties the API
// promises, each of which fails loudly (abort) so libFuzzer keeps the input:
//  * the UDP checksum option only ever adds the udp_checksum verdict;
//  * an accepted frame's offsets stay inside the frame and add up;
//  * parse_mbuf on a 2- or 3-segment chain gives the same verdict, view and
//    fields as parse_frame on the contiguous copy;
//  * the builder accepts the decoded fields and its frame parses back to them;
//  * a CM MAD (a QP1 frame's payload, or the input's bytes themselves) that
//    the header check accepts decodes, and its encoding is a fixed point:
//    decoding and encoding it again gives the same 256 bytes.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <span>

#include "cm/cm_messages.h"
#include "cm/cma_header.h"
#include "fuzz_input.h"
#include "mbuf_chain.h"
#include "uroce/wire/builder.h"
#include "uroce/wire/parser.h"

using namespace uroce::wire;

namespace {

constexpr uint32_t kPmtu = 1024;

#define FUZZ_CHECK(cond)                                                          \
  do {                                                                            \
    if (!(cond)) {                                                                \
      std::fprintf(stderr, "fuzz_parser: check failed at line %d: %s\n", __LINE__, #cond); \
      std::abort();                                                               \
    }                                                                             \
  } while (0)

ParseError parse(std::span<const uint8_t> frame, PacketView& v, bool icrc, bool udp) {
  ParseOptions o;
  o.verify_icrc = icrc;
  o.verify_udp_checksum = udp;
  return parse_frame(frame, v, o);
}

void check_layout(const PacketView& v, size_t frame_len) {
  FUZZ_CHECK(v.frame_len == frame_len);
  FUZZ_CHECK(v.end_off <= frame_len);
  FUZZ_CHECK(v.l3_off < v.l4_off && v.l4_off < v.bth_off && v.bth_off < v.payload_off);
  FUZZ_CHECK(v.payload_off <= kMaxHeaderLen);
  FUZZ_CHECK(v.payload_len <= kMaxPayloadLen && v.pad <= 3);
  FUZZ_CHECK(size_t(v.payload_off) + v.payload_len + v.pad + 4 == v.end_off);
  FUZZ_CHECK(v.op != nullptr && v.op->valid());
}

// The semantic layer only reads what the parser validated.
void exercise(const PacketView& v) {
  (void)check_semantics(v);
  (void)check_semantics(v, kPmtu);
  (void)decode_fields(v);
}

void check_udp_option(std::span<const uint8_t> frame) {
  PacketView off, on;
  const ParseError e_off = parse(frame, off, true, false);
  const ParseError e_on = parse(frame, on, true, true);
  if (e_on != e_off) FUZZ_CHECK(e_on == ParseError::udp_checksum && (e_off == ParseError::ok || e_off == ParseError::icrc));
  if (e_on == ParseError::ok) exercise(on);
}

bool same_view(const PacketView& a, const PacketView& b) {
  return a.op == b.op && a.frame_len == b.frame_len && a.end_off == b.end_off && a.l3_off == b.l3_off &&
         a.l4_off == b.l4_off && a.bth_off == b.bth_off && a.payload_off == b.payload_off &&
         a.payload_len == b.payload_len && a.pad == b.pad && a.ipv6 == b.ipv6 && a.vlan == b.vlan &&
         a.icrc_wire == b.icrc_wire && a.icrc_calc == b.icrc_calc;
}

void check_mbuf(const uroce::fuzz::FuzzInput& in, bool icrc) {
  PacketView flat;
  const ParseError e_flat = parse(in.frame, flat, icrc, false);
  uroce::fuzz::MbufChain chain(in.frame, in.cuts);
  PacketView seg;
  HeaderScratch scratch;
  ParseOptions o;
  o.verify_icrc = icrc;
  const ParseError e_seg = parse_mbuf(chain.head(), seg, scratch, o);
  if (e_seg != e_flat) {
    std::fprintf(stderr, "fuzz_parser: parse_frame says %s, parse_mbuf says %s\n", to_string(e_flat), to_string(e_seg));
  }
  FUZZ_CHECK(e_seg == e_flat);
  if (e_seg != ParseError::ok) return;
  check_layout(flat, in.frame.size());
  FUZZ_CHECK(same_view(seg, flat));
  FUZZ_CHECK(std::memcmp(seg.headers, flat.headers, flat.payload_off) == 0);
  FUZZ_CHECK(decode_fields(seg) == decode_fields(flat));
  FUZZ_CHECK(check_semantics(seg) == check_semantics(flat));
  FUZZ_CHECK(check_semantics(seg, kPmtu) == check_semantics(flat, kPmtu));
}

// Every frame the parser accepts is one the builder can express.
void check_rebuild(std::span<const uint8_t> frame) {
  PacketView v;
  if (parse(frame, v, true, false) != ParseError::ok) return;
  const PacketFields f = decode_fields(v);
  auto out = std::make_unique<uint8_t[]>(kMaxHeaderLen + kMaxPayloadLen + 8);
  FrameLayout layout;
  const BuildError b = build_frame(f, {v.payload, v.payload_len}, {out.get(), kMaxHeaderLen + kMaxPayloadLen + 8}, layout);
  if (b != BuildError::ok) std::fprintf(stderr, "fuzz_parser: build_frame says %s\n", to_string(b));
  FUZZ_CHECK(b == BuildError::ok);
  PacketView again;
  const ParseError e = parse({out.get(), layout.frame_len}, again, true, false);
  if (e != ParseError::ok) std::fprintf(stderr, "fuzz_parser: rebuilt frame: %s\n", to_string(e));
  FUZZ_CHECK(e == ParseError::ok);
  FUZZ_CHECK(decode_fields(again) == f);
  FUZZ_CHECK(again.pad == v.pad);
}

template <class Decode>
void cm_fixed_point(const uint8_t* data, uint64_t tid, Decode decode) {
  namespace cm = uroce::cm;
  const cm::Mad once = cm::encode(decode(data), tid);
  const cm::Mad twice = cm::encode(decode(once.data() + cm::kMadHeaderSize), tid);
  FUZZ_CHECK(once == twice);
}

// What the connection manager reads from a MAD QP1 received.
void check_cm(std::span<const uint8_t> mad) {
  namespace cm = uroce::cm;
  cm::MadHeader h;
  cm::Attr attr{};
  if (cm::check_cm_header(mad, h, attr) != cm::MadCheck::ok) return;
  FUZZ_CHECK(mad.size() >= cm::kMadSize);
  const uint8_t* d = mad.data() + cm::kMadHeaderSize;
  cm::CmaHeader cma;
  switch (attr) {
    case cm::Attr::req:
      (void)cm::decode_cma_header(cm::decode_req(d).private_data, cma);
      cm_fixed_point(d, h.tid, cm::decode_req);
      break;
    case cm::Attr::rep: cm_fixed_point(d, h.tid, cm::decode_rep); break;
    case cm::Attr::rtu: cm_fixed_point(d, h.tid, cm::decode_rtu); break;
    case cm::Attr::rej: cm_fixed_point(d, h.tid, cm::decode_rej); break;
    case cm::Attr::mra: cm_fixed_point(d, h.tid, cm::decode_mra); break;
    case cm::Attr::dreq: cm_fixed_point(d, h.tid, cm::decode_dreq); break;
    case cm::Attr::drep: cm_fixed_point(d, h.tid, cm::decode_drep); break;
    case cm::Attr::sidr_req: {
      const cm::SidrReq r = cm::decode_sidr_req(d);
      (void)cm::decode_cma_header({r.private_data.data(), r.private_data.size()}, cma);
      cm_fixed_point(d, h.tid, cm::decode_sidr_req);
      break;
    }
    case cm::Attr::sidr_rep: cm_fixed_point(d, h.tid, cm::decode_sidr_rep); break;
  }
}

// A frame to QP1: its payload is a MAD.
void check_cm_frame(std::span<const uint8_t> frame) {
  PacketView v;
  if (parse(frame, v, false, false) != ParseError::ok || v.bth().dest_qp() != uroce::cm::kGsiQpn) return;
  check_cm({v.payload, v.payload_len});
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const uroce::fuzz::FuzzInput in = uroce::fuzz::split_input({data, size});
  if (size < uroce::fuzz::kControlBytes) return 0;
  // An exactly-sized copy: libFuzzer's own buffer may have slack after it.
  auto copy = std::make_unique<uint8_t[]>(in.frame.size());
  if (!in.frame.empty()) std::memcpy(copy.get(), in.frame.data(), in.frame.size());
  const std::span<const uint8_t> frame(copy.get(), in.frame.size());
  check_udp_option(frame);
  const uroce::fuzz::FuzzInput own{frame, in.cuts};
  if (frame.size() <= UINT16_MAX) {  // each segment's data_len is 16 bits
    check_mbuf(own, true);
    check_mbuf(own, false);
  }
  check_rebuild(frame);
  check_cm_frame(frame);
  check_cm(frame);
  return 0;
}
