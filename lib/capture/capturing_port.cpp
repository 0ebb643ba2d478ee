// SPDX-License-Identifier: BSD-3-Clause
#include "uroce/capture/capturing_port.h"

#include <rte_mbuf.h>

#include <cstring>

#include "uroce/wire/byte_order.h"
#include "uroce/wire/ipv4.h"

namespace uroce::capture {
namespace {

// Holds (+1) or releases (-1) every segment: a PMD frees a chain segment
// by segment, so a reference on the head alone would not keep the rest.
void hold_chain(rte_mbuf* m, int16_t delta) {
  for (; m != nullptr; m = m->next) rte_mbuf_refcnt_update(m, delta);
}

}  // namespace

void CapturingPort::record(rte_mbuf* const* pkts, uint16_t n) {
  const int64_t usec = int64_t(clock_.now_ns() / 1000);
  for (uint16_t i = 0; i < n; ++i) {
    const rte_mbuf* m = pkts[i];
    const uint32_t len = std::min<uint32_t>(m->pkt_len, uint32_t(scratch_.size()));
    const auto* p = static_cast<const uint8_t*>(rte_pktmbuf_read(m, 0, len, scratch_.data()));
    if (p == nullptr) continue;
    const uint32_t l3_end = uint32_t(m->l2_len) + m->l3_len;
    if ((m->ol_flags & RTE_MBUF_F_TX_IP_CKSUM) && m->l3_len >= wire::kIpv4MinHeaderLen && l3_end <= len) {
      if (p != scratch_.data()) std::memcpy(scratch_.data(), p, len);
      uint8_t* ip = scratch_.data() + m->l2_len;
      wire::store_be16(ip + 10, 0);
      wire::store_be16(ip + 10, wire::ipv4_header_checksum(ip, m->l3_len));
      p = scratch_.data();
    }
    writer_.write({p, len}, usec);
  }
}

uint16_t CapturingPort::rx_burst(rte_mbuf** pkts, uint16_t n) {
  const uint16_t got = inner_.rx_burst(pkts, n);
  record(pkts, got);
  return got;
}

uint16_t CapturingPort::tx_burst(rte_mbuf** pkts, uint16_t n) {
  // Record only what the port accepts (the rest is offered again later).
  // A PMD may free what it sent inside tx_burst, so hold every segment
  // across the call.
  rte_mbuf* held[64];
  n = std::min<uint16_t>(n, 64);
  for (uint16_t i = 0; i < n; ++i) {
    held[i] = pkts[i];
    hold_chain(held[i], 1);
  }
  const uint16_t sent = inner_.tx_burst(pkts, n);
  record(held, sent);
  for (uint16_t i = 0; i < n; ++i) rte_pktmbuf_free(held[i]);
  return sent;
}

}  // namespace uroce::capture
