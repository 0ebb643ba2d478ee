// raw_bw / raw_lat: plain Ethernet frames over the same ports, without the
// RDMA stack, like perftest's raw_ethernet tools. They give the link's own
// limit, to put next to the RDMA figures measured by the same binary.
#include <rte_mbuf.h>
#include <rte_mempool.h>

#include <algorithm>
#include <chrono>
#include <cstring>

#include "raw.h"

namespace uroce::perf {
namespace {

using Clock = std::chrono::steady_clock;
constexpr uint16_t kEtherTypeExperimental = 0x88B5;  // IEEE local experimental
constexpr uint16_t kBurst = 32;

// Frame `seq`: Ethernet header, then the sequence number, then a pattern.
bool make_frame(rte_mempool* pool, const PacketPort& from, const PacketPort& to, uint64_t size, uint64_t seq,
                rte_mbuf*& m) {
  m = rte_pktmbuf_alloc(pool);
  if (m == nullptr) return false;
  auto* p = reinterpret_cast<uint8_t*>(rte_pktmbuf_append(m, uint16_t(size)));
  if (p == nullptr) {
    rte_pktmbuf_free(m);
    return false;
  }
  std::memcpy(p, to.mac().bytes.data(), 6);
  std::memcpy(p + 6, from.mac().bytes.data(), 6);
  p[12] = kEtherTypeExperimental >> 8;
  p[13] = kEtherTypeExperimental & 0xFF;
  std::memcpy(p + 14, &seq, 8);
  fill_pattern(p + 22, size - 22, uint32_t(seq));
  return true;
}

// Checks a received frame: our type, the expected sequence number, intact.
bool check_frame(const rte_mbuf* m, uint64_t size, uint64_t want_seq, bool verify, std::string& error) {
  const auto* p = rte_pktmbuf_mtod(m, const uint8_t*);
  uint64_t seq;
  std::memcpy(&seq, p + 14, 8);
  if (m->pkt_len != size || p[12] != (kEtherTypeExperimental >> 8) || seq != want_seq) {
    error = "raw frame " + std::to_string(want_seq) + ": got length " + std::to_string(m->pkt_len) +
            ", sequence " + std::to_string(seq) + " (lost, reordered or damaged)";
    return false;
  }
  return !verify || check_pattern(p + 22, size - 22, uint32_t(seq), error);
}

}  // namespace

uint64_t raw_frame_size(uint64_t size, uint16_t port_mtu) {
  return std::clamp<uint64_t>(size, 64, uint64_t(port_mtu) + 14);
}

BwResult run_raw_bw(PacketPort& tx, PacketPort& rx, rte_mempool* pool, const Options& o, uint64_t size) {
  BwResult r;
  r.size = size;
  uint64_t sent = 0, received = 0;
  const auto t0 = Clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(Clock::now() - t0).count(); };
  while (r.error.empty() && (o.duration ? elapsed() < o.duration : received < o.iters)) {
    rte_mbuf* burst[kBurst];
    uint16_t n = 0;
    const uint64_t limit = o.duration ? UINT64_MAX : o.iters;
    while (n < kBurst && sent + n < limit && sent + n - received < o.tx_depth &&
           make_frame(pool, tx, rx, size, sent + n, burst[n]))
      ++n;
    const uint16_t k = tx.tx_burst(burst, n);
    for (uint16_t i = k; i < n; ++i) rte_pktmbuf_free(burst[i]);  // sent again with the same numbers
    sent += k;
    rte_mbuf* in[kBurst];
    const uint16_t got = rx.rx_burst(in, kBurst);
    for (uint16_t i = 0; i < got; ++i) {
      if (r.error.empty()) check_frame(in[i], size, received, o.verify, r.error);
      ++received;
      rte_pktmbuf_free(in[i]);
    }
  }
  r.seconds = elapsed();
  r.iters = received;
  r.avg_bps = r.peak_bps = double(received) * double(size) / r.seconds;
  r.msg_rate = double(received) / r.seconds;
  return r;
}

LatResult run_raw_lat(PacketPort& a, PacketPort& b, rte_mempool* pool, const Options& o, uint64_t size) {
  LatResult r;
  r.size = size;
  r.usec.reserve(o.iters);
  auto recv_one = [&](PacketPort& port, uint64_t seq) {
    rte_mbuf* m = nullptr;
    while (port.rx_burst(&m, 1) == 0) {
    }
    check_frame(m, size, seq, o.verify, r.error);
    rte_pktmbuf_free(m);
  };
  auto send_one = [&](PacketPort& from, PacketPort& to, uint64_t seq) {
    rte_mbuf* m = nullptr;
    if (!make_frame(pool, from, to, size, seq, m)) return void(r.error = "no mbuf for a raw frame");
    while (from.tx_burst(&m, 1) == 0) {
    }
  };
  for (uint64_t i = 0; i < o.iters && r.error.empty(); ++i) {
    const auto t0 = Clock::now();
    send_one(a, b, i);
    recv_one(b, i);
    send_one(b, a, i);  // the echo
    recv_one(a, i);
    r.usec.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / 2);
  }
  return r;
}

}  // namespace uroce::perf
