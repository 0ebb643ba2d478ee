// SPDX-License-Identifier: BSD-3-Clause
// parse_frame() for DPDK mbuf chains: headers in place when the first
// segment holds them, the payload and ICRC hashed segment by segment.
#include <rte_mbuf.h>

#include <algorithm>
#include <cstring>

#include "ones_complement.h"
#include "parse_headers.h"
#include "uroce/wire/icrc.h"

namespace uroce::wire {
namespace {

// Calls fn(ptr, len) for the bytes [off, off + len) of the chain.
template <class Fn>
bool for_each_span(const rte_mbuf* m, uint32_t off, uint32_t len, Fn&& fn) {
  for (; m != nullptr && len > 0; m = m->next) {
    if (off >= m->data_len) {
      off -= m->data_len;
      continue;
    }
    const uint32_t n = std::min<uint32_t>(m->data_len - off, len);
    fn(rte_pktmbuf_mtod_offset(m, const uint8_t*, off), n);
    len -= n;
    off = 0;
  }
  return len == 0;
}

bool copy_out(const rte_mbuf* m, uint32_t off, uint32_t len, uint8_t* dst) {
  return for_each_span(m, off, len, [&](const uint8_t* p, uint32_t n) {
    std::memcpy(dst, p, n);
    dst += n;
  });
}

// RFC 768/8200: the pseudo header and the datagram sum to 0xFFFF. Summed
// in memory order (ones_complement.h); a segment that starts at an odd
// offset of the datagram contributes its sum byte-swapped.
bool udp_checksum_ok(const rte_mbuf* m, const PacketView& v) {
  const uint8_t* ip = v.headers + v.l3_off;
  uint64_t acc = v.ipv6 ? detail::sum_native(0, ip + 8, 32) : detail::sum_native(0, ip + 12, 8);
  const uint32_t udp_len = v.end_off - v.l4_off;
  const uint8_t proto_len[4] = {0, kIpProtoUdp, uint8_t(udp_len >> 8), uint8_t(udp_len)};
  acc = detail::sum_native(acc, proto_len, 4);
  uint32_t at = 0;
  const bool whole = for_each_span(m, v.l4_off, udp_len, [&](const uint8_t* p, uint32_t n) {
    const uint16_t s = detail::fold_native(detail::sum_native(0, p, n));
    acc += (at & 1) ? uint16_t(s << 8 | s >> 8) : s;
    at += n;
  });
  return whole && detail::fold_native(acc) == 0xFFFF;
}

// A non-zero checksum is checked, by the port when it says so.
bool udp_checksum_passes(const rte_mbuf* m, const PacketView& v) {
  if (v.udp().checksum() == 0) return true;
  switch (m->ol_flags & RTE_MBUF_F_RX_L4_CKSUM_MASK) {
    case RTE_MBUF_F_RX_L4_CKSUM_GOOD:
    case RTE_MBUF_F_RX_L4_CKSUM_NONE: return true;  // data verified, field not filled in
    case RTE_MBUF_F_RX_L4_CKSUM_BAD: return false;
    default: return udp_checksum_ok(m, v);
  }
}

// The port's IPv4 header verdict: GOOD, or NONE (header verified, field
// not filled in), spares the software sum; BAD or no verdict leaves it to
// the parser, which also reports a bad header as ipv4_checksum.
bool port_verified_ipv4_header(const rte_mbuf* m) {
  const uint64_t f = m->ol_flags & RTE_MBUF_F_RX_IP_CKSUM_MASK;
  return f == RTE_MBUF_F_RX_IP_CKSUM_GOOD || f == RTE_MBUF_F_RX_IP_CKSUM_NONE;
}

}  // namespace

ParseError parse_mbuf(const rte_mbuf* m, PacketView& v, HeaderScratch& scratch, const ParseOptions& opts) {
  const uint32_t frame_len = m->pkt_len;
  const uint8_t* hdr = rte_pktmbuf_mtod(m, const uint8_t*);
  size_t avail = m->data_len;
  if (avail < frame_len && avail < kMaxHeaderLen) {
    avail = std::min<uint32_t>(frame_len, kMaxHeaderLen);
    if (!copy_out(m, 0, uint32_t(avail), scratch.bytes)) return ParseError::truncated;
    hdr = scratch.bytes;
  }
  ParseOptions hdr_opts = opts;
  if (port_verified_ipv4_header(m)) hdr_opts.verify_ipv4_checksum = false;
  ParseError e = detail::parse_headers(hdr, avail, frame_len, v, hdr_opts);
  if (e != ParseError::ok) return e;
  v.mbuf = m;
  const uint32_t body_len = v.payload_len + v.pad;
  // Point into the mbuf itself, never into the scratch copy of the headers.
  if (m->data_len >= v.payload_off + body_len) v.payload = rte_pktmbuf_mtod(m, const uint8_t*) + v.payload_off;
  uint8_t icrc[4];
  if (!copy_out(m, v.end_off - 4, 4, icrc)) return ParseError::truncated;
  v.icrc_wire = load_le32(icrc);
  if (opts.verify_udp_checksum && !udp_checksum_passes(m, v)) return ParseError::udp_checksum;
  if (opts.verify_icrc) {
    // A small body in place after the headers is hashed with them.
    const bool with_body = v.payload != nullptr && hdr == v.payload - v.payload_off && body_len <= kIcrcSmallBody;
    uint32_t crc = detail::icrc_through_ext(v, with_body ? body_len : 0);
    if (!with_body)
      for_each_span(m, v.payload_off, body_len, [&](const uint8_t* p, uint32_t n) { crc = crc32(crc, p, n); });
    v.icrc_calc = crc;
    if (crc != v.icrc_wire) return ParseError::icrc;
  }
  return ParseError::ok;
}

}  // namespace uroce::wire
