// SPDX-License-Identifier: BSD-3-Clause
#include "uroce/sim/sim_port.h"

#include <rte_mbuf.h>

#include "uroce/sim/sim_wire.h"

namespace uroce::sim {
namespace {

// Enough for a deep burst toward one port without growing in steady state.
constexpr size_t kQueueReserve = 4096;

}  // namespace

SimPort::SimPort(SimWire& wire, uint32_t index, wire::MacAddr mac, uint16_t mtu)
    : wire_(wire), index_(index), mac_(mac), mtu_(mtu) {
  std::vector<InFlight> storage;
  storage.reserve(kQueueReserve);
  queue_ = Queue(Later{}, std::move(storage));
}

SimPort::~SimPort() { drop_all(); }

void SimPort::drop_all() {
  while (!queue_.empty()) {
    rte_pktmbuf_free(queue_.top().m);
    queue_.pop();
  }
}

uint16_t SimPort::rx_burst(rte_mbuf** pkts, uint16_t n) {
  if (wire_.has_switch()) wire_.settle_switch();
  const uint64_t now = wire_.clock().now_ns();
  uint16_t k = 0;
  while (k < n && !queue_.empty() && queue_.top().deliver_ns <= now) {
    const InFlight& f = queue_.top();
    pkts[k++] = f.m;
    wire_.count_delivered(f.from, index_);
    queue_.pop();
  }
  return k;
}

uint16_t SimPort::tx_burst(rte_mbuf** pkts, uint16_t n) {
  for (uint16_t i = 0; i < n; ++i) wire_.transmit(index_, pkts[i]);
  return n;
}

}  // namespace uroce::sim
