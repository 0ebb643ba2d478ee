// SPDX-License-Identifier: BSD-3-Clause
// raw_bw / raw_lat: plain Ethernet frames over the same ports, without the
// RDMA stack, like perftest's raw_ethernet tools. They give the link's own
// limit, to put next to the RDMA figures measured by the same binary.
#include <rte_mbuf.h>
#include <rte_mempool.h>

#include <algorithm>
#include <chrono>
#include <cstring>

#include "cycle_clock.h"
#include "raw.h"
#include "raw_frame.h"

namespace uroce::perf {
namespace {

using Clock = CycleClock;
constexpr uint16_t kBurst = 32;

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
           make_raw_frame(pool, tx.mac(), rx.mac(), size, sent + n, burst[n]))
      ++n;
    const uint16_t k = tx.tx_burst(burst, n);
    for (uint16_t i = k; i < n; ++i) rte_pktmbuf_free(burst[i]);  // sent again with the same numbers
    sent += k;
    rte_mbuf* in[kBurst];
    const uint16_t got = rx.rx_burst(in, kBurst);
    for (uint16_t i = 0; i < got; ++i) {
      if (r.error.empty()) check_raw_frame(in[i], size, received, o.verify, r.error);
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
  r.posted.reserve(o.iters);
  auto recv_one = [&](PacketPort& port, uint64_t seq) {  // with --raw-acks, and its ACK-sized frame
    for (bool ack = !o.raw_acks, data = false; !(ack && data);) {
      rte_mbuf* m = nullptr;
      if (port.rx_burst(&m, 1) == 0) continue;
      if (is_ack_frame(m)) ack = true, ++r.ack_frames;
      else data = true, check_raw_frame(m, size, seq, o.verify, r.error);
      rte_pktmbuf_free(m);
    }
  };
  auto send_one = [&](PacketPort& from, PacketPort& to, uint64_t seq) {
    rte_mbuf* m = nullptr;
    rte_mbuf* ack = nullptr;
    if (!make_raw_frame(pool, from.mac(), to.mac(), size, seq, m) ||
        (o.raw_acks && !make_ack_frame(pool, from.mac(), to.mac(), ack))) {
      rte_pktmbuf_free(m);
      r.error = "no mbuf for a raw frame";
      return false;
    }
    send_raw(from, ack, m, UINT64_MAX);  // a ring port takes them once its peer has read
    return true;
  };
  for (uint64_t i = 0; i < o.iters && r.error.empty(); ++i) {
    r.posted.push_back(Clock::cycles());
    if (!send_one(a, b, i)) break;
    recv_one(b, i);
    if (!send_one(b, a, i)) break;  // the echo
    recv_one(a, i);
    ++r.iters;
  }
  return r;
}

}  // namespace uroce::perf
