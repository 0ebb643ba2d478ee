// SPDX-License-Identifier: BSD-3-Clause
#include "raw_frame.h"

#include <rte_mbuf.h>

#include <cstring>

#include "runner.h"
#include "uroce/port/packet_port.h"

namespace uroce::perf {

bool make_raw_frame(rte_mempool* pool, const wire::MacAddr& src, const wire::MacAddr& dst, uint64_t size,
                    uint64_t seq, rte_mbuf*& m) {
  m = rte_pktmbuf_alloc(pool);
  if (m == nullptr) return false;
  auto* p = reinterpret_cast<uint8_t*>(rte_pktmbuf_append(m, uint16_t(size)));
  if (p == nullptr) {
    rte_pktmbuf_free(m);
    m = nullptr;
    return false;
  }
  std::memcpy(p, dst.bytes.data(), 6);
  std::memcpy(p + 6, src.bytes.data(), 6);
  p[12] = kRawEtherType >> 8;
  p[13] = kRawEtherType & 0xFF;
  std::memcpy(p + 14, &seq, 8);
  fill_pattern(p + 22, size - 22, uint32_t(seq));
  return true;
}

namespace {
constexpr uint64_t kAckFrameSeq = ~0ull;  // no raw_lat run gets this far
}

bool make_ack_frame(rte_mempool* pool, const wire::MacAddr& src, const wire::MacAddr& dst, rte_mbuf*& m) {
  return make_raw_frame(pool, src, dst, kAckFrameSize, kAckFrameSeq, m);
}

bool is_ack_frame(const rte_mbuf* m) {
  uint64_t seq;
  return raw_frame_seq(m, seq) && seq == kAckFrameSeq;
}

bool send_raw(PacketPort& port, rte_mbuf* ack, rte_mbuf* m, uint64_t tries) {
  rte_mbuf* burst[2];
  uint16_t n = 0;
  if (ack != nullptr) burst[n++] = ack;
  burst[n++] = m;
  uint16_t sent = 0;
  for (uint64_t t = 0; sent < n && t < tries; ++t) sent += port.tx_burst(burst + sent, uint16_t(n - sent));
  for (uint16_t i = sent; i < n; ++i) rte_pktmbuf_free(burst[i]);
  return sent == n;
}

bool raw_frame_seq(const rte_mbuf* m, uint64_t& seq) {
  const auto* p = rte_pktmbuf_mtod(m, const uint8_t*);
  if (m->data_len < 22 || p[12] != (kRawEtherType >> 8) || p[13] != (kRawEtherType & 0xFF)) return false;
  std::memcpy(&seq, p + 14, 8);
  return true;
}

bool check_raw_frame(const rte_mbuf* m, uint64_t size, uint64_t want_seq, bool verify, std::string& error) {
  uint64_t seq = ~0ull;
  if (!raw_frame_seq(m, seq) || m->pkt_len != size || seq != want_seq) {
    error = "raw frame " + std::to_string(want_seq) + ": got length " + std::to_string(m->pkt_len) +
            ", sequence " + std::to_string(seq) + " (lost, reordered or damaged)";
    return false;
  }
  return !verify || m->nb_segs != 1 ||
         check_pattern(rte_pktmbuf_mtod(m, const uint8_t*) + 22, size - 22, uint32_t(seq), error);
}

}  // namespace uroce::perf
