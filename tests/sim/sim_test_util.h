// SPDX-License-Identifier: BSD-3-Clause
// Frames and a driver loop for the simulated-wire tests.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "mbuf_test_util.h"
#include "uroce/sim/sim_wire.h"

namespace uroce::test {

inline wire::MacAddr mac(uint8_t last) { return wire::MacAddr{{0x02, 0, 0, 0, 0, last}}; }
inline const wire::MacAddr kBroadcast{{0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF}};

// An Ethernet frame of `size` bytes (>= 18) whose bytes 14..17 hold `tag`,
// so a receiver can tell which frame it got; the rest is a pattern.
inline std::vector<uint8_t> make_frame(const wire::MacAddr& dst, const wire::MacAddr& src, size_t size,
                                       uint32_t tag, uint16_t ethertype = wire::kEtherTypeIpv4) {
  std::vector<uint8_t> f(size);
  for (size_t i = 0; i < size; ++i) f[i] = uint8_t(i * 7 + tag);
  wire::EthRef eth(f.data());
  eth.set_dst(dst);
  eth.set_src(src);
  eth.set_ethertype(ethertype);
  std::memcpy(f.data() + wire::kEthHeaderLen, &tag, sizeof tag);
  return f;
}

inline uint32_t tag_of(const std::vector<uint8_t>& f) {
  uint32_t tag = 0;
  std::memcpy(&tag, f.data() + wire::kEthHeaderLen, sizeof tag);
  return tag;
}

inline void send(sim::SimPort& port, rte_mempool* pool, const std::vector<uint8_t>& bytes) {
  rte_mbuf* m = mbuf_from_bytes(pool, bytes);
  if (port.tx_burst(&m, 1) != 1) rte_pktmbuf_free(m);
}

struct Received {
  uint64_t t_ns;
  uint32_t port;
  std::vector<uint8_t> bytes;
  const rte_mempool* pool = nullptr;  // where the mbuf came from; not compared
  bool operator==(const Received& o) const { return t_ns == o.t_ns && port == o.port && bytes == o.bytes; }
};

// Receives on every port at the current time, copying and freeing frames.
inline void receive_now(sim::SimWire& wire, std::vector<Received>& out) {
  rte_mbuf* burst[32];
  for (size_t p = 0; p < wire.port_count(); ++p) {
    uint16_t n;
    while ((n = wire.port(p).rx_burst(burst, 32)) > 0) {
      for (uint16_t i = 0; i < n; ++i) {
        out.push_back({wire.clock().now_ns(), uint32_t(p), mbuf_bytes(burst[i]), burst[i]->pool});
        rte_pktmbuf_free(burst[i]);
      }
    }
  }
}

// Receives every frame due up to `t` at its exact delivery time, then
// moves the clock to `t`.
inline void run_until(sim::SimWire& wire, sim::VirtualClock& clock, uint64_t t, std::vector<Received>& out) {
  receive_now(wire, out);
  for (uint64_t next; (next = wire.next_delivery_ns()) <= t;) {
    clock.advance_to(next);
    receive_now(wire, out);
  }
  clock.advance_to(t);
}

// The driver loop of sim_wire.h with no engines: receive, then jump to the
// next delivery, until nothing is in flight.
inline std::vector<Received> drain(sim::SimWire& wire, sim::VirtualClock& clock) {
  std::vector<Received> out;
  for (;;) {
    receive_now(wire, out);
    const uint64_t t = wire.next_delivery_ns();
    if (t == kNever) return out;
    clock.advance_to(t);
  }
}

}  // namespace uroce::test

namespace uroce::test {

// Sends n frames of `size` bytes from `from` to `dst`, frame i (tag i) at
// start + i * gap_ns, receiving as time passes; returns everything received.
inline std::vector<Received> pump(sim::SimWire& wire, sim::VirtualClock& clock, sim::SimPort& from,
                                  const wire::MacAddr& dst, rte_mempool* pool, uint32_t n, size_t size,
                                  uint64_t gap_ns) {
  std::vector<Received> out;
  const uint64_t start = clock.now_ns();
  for (uint32_t i = 0; i < n; ++i) {
    run_until(wire, clock, start + i * gap_ns, out);
    send(from, pool, make_frame(dst, from.mac(), size, i));
  }
  const auto rest = drain(wire, clock);
  out.insert(out.end(), rest.begin(), rest.end());
  return out;
}

}  // namespace uroce::test
