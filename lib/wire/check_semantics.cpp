// SPDX-License-Identifier: BSD-3-Clause
#include "uroce/wire/parser.h"

namespace uroce::wire {
namespace {

ParseError check_aeth(const PacketView& v) {
  const uint8_t syn = v.aeth().syndrome();
  const AethType type = aeth_type(syn);
  if (type == AethType::reserved) return ParseError::aeth_syndrome;
  if (type == AethType::nak && aeth_value(syn) > uint8_t(NakCode::invalid_rd_request))
    return ParseError::aeth_syndrome;
  // Data-bearing responses always acknowledge; only ACKNOWLEDGE may NAK.
  if (!v.op->has(opf::ack) && type != AethType::ack) return ParseError::aeth_syndrome;
  return ParseError::ok;
}

ParseError check_reth(const PacketView& v) {
  if (!v.op->has(opf::write)) return ParseError::ok;
  const uint32_t len = v.reth().dma_len();
  if (v.op->is_only() && len != v.payload_len) return ParseError::reth_dma_len;
  if (v.op->is_first() && len <= v.payload_len) return ParseError::reth_dma_len;
  return ParseError::ok;
}

ParseError check_pmtu(const PacketView& v, uint32_t pmtu) {
  if (pmtu == 0 || !v.op->has(opf::payload)) return ParseError::ok;
  if ((v.op->is_first() || v.op->is_middle()) && v.payload_len != pmtu) return ParseError::pmtu;
  if (v.payload_len > pmtu) return ParseError::pmtu;
  return ParseError::ok;
}

}  // namespace

ParseError check_semantics(const PacketView& v, uint32_t pmtu) {
  // Only the last packet of a message may be padded.
  if ((v.op->is_first() || v.op->is_middle()) && v.pad != 0) return ParseError::padcount;
  if (ParseError e = check_pmtu(v, pmtu); e != ParseError::ok) return e;
  if (v.op->has_ext(Ext::reth))
    if (ParseError e = check_reth(v); e != ParseError::ok) return e;
  if (v.op->has_ext(Ext::atomic_eth) && (v.atomic_eth().va() & 7) != 0) return ParseError::atomic_align;
  if (v.op->has_ext(Ext::aeth)) return check_aeth(v);
  return ParseError::ok;
}

}  // namespace uroce::wire
