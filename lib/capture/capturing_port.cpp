#include "uroce/capture/capturing_port.h"

#include <rte_mbuf.h>

namespace uroce::capture {

void CapturingPort::record(rte_mbuf* const* pkts, uint16_t n) {
  const int64_t usec = int64_t(clock_.now_ns() / 1000);
  for (uint16_t i = 0; i < n; ++i) {
    const rte_mbuf* m = pkts[i];
    const uint32_t len = std::min<uint32_t>(m->pkt_len, uint32_t(scratch_.size()));
    const void* p = rte_pktmbuf_read(m, 0, len, scratch_.data());
    if (p != nullptr) writer_.write({static_cast<const uint8_t*>(p), len}, usec);
  }
}

uint16_t CapturingPort::rx_burst(rte_mbuf** pkts, uint16_t n) {
  const uint16_t got = inner_.rx_burst(pkts, n);
  record(pkts, got);
  return got;
}

uint16_t CapturingPort::tx_burst(rte_mbuf** pkts, uint16_t n) {
  // Record only what the port accepts (the rest is offered again later).
  // A PMD may free what it sent inside tx_burst, so hold a reference
  // across the call.
  rte_mbuf* held[64];
  n = std::min<uint16_t>(n, 64);
  for (uint16_t i = 0; i < n; ++i) {
    held[i] = pkts[i];
    rte_mbuf_refcnt_update(held[i], 1);
  }
  const uint16_t sent = inner_.tx_burst(pkts, n);
  record(held, sent);
  for (uint16_t i = 0; i < n; ++i) rte_pktmbuf_free(held[i]);
  return sent;
}

}  // namespace uroce::capture
