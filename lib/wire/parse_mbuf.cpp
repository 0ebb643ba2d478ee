// SPDX-License-Identifier: BSD-3-Clause
// parse_frame() for DPDK mbuf chains: headers in place when the first
// segment holds them, the payload and ICRC hashed segment by segment.
#include <rte_mbuf.h>

#include <algorithm>
#include <cstring>

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
  ParseError e = detail::parse_headers(hdr, avail, frame_len, v, opts);
  if (e != ParseError::ok) return e;
  v.mbuf = m;
  const uint32_t body_len = v.payload_len + v.pad;
  // Point into the mbuf itself, never into the scratch copy of the headers.
  if (m->data_len >= v.payload_off + body_len) v.payload = rte_pktmbuf_mtod(m, const uint8_t*) + v.payload_off;
  uint8_t icrc[4];
  if (!copy_out(m, v.end_off - 4, 4, icrc)) return ParseError::truncated;
  v.icrc_wire = load_le32(icrc);
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
