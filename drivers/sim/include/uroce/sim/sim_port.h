// SPDX-License-Identifier: BSD-3-Clause
// One station on the simulated wire. tx_burst hands frames to the wire;
// rx_burst returns the frames whose delivery time has come, earliest
// first, and frames due at the same time in the order they were sent.
#pragma once

#include <cstddef>
#include <cstdint>
#include <queue>
#include <vector>

#include "uroce/port/clock.h"
#include "uroce/port/packet_port.h"

namespace uroce::sim {

class SimWire;

// A frame on its way to a port.
struct InFlight {
  uint64_t deliver_ns = 0;
  uint64_t seq = 0;  // wire-wide send order; breaks ties between equal times
  rte_mbuf* m = nullptr;
  uint32_t from = 0;  // sender's port index, for the link counters
};

class SimPort final : public PacketPort {
 public:
  SimPort(SimWire& wire, uint32_t index, wire::MacAddr mac, uint16_t mtu);
  ~SimPort() override;
  // Frees every frame still queued for this port (in flight to it).
  void drop_all();
  SimPort(const SimPort&) = delete;
  SimPort& operator=(const SimPort&) = delete;

  uint16_t rx_burst(rte_mbuf** pkts, uint16_t n) override;
  // Accepts every frame; the wire owns them from here on.
  uint16_t tx_burst(rte_mbuf** pkts, uint16_t n) override;
  wire::MacAddr mac() const override { return mac_; }
  uint16_t mtu() const override { return mtu_; }

  uint32_t index() const { return index_; }
  // Frames on their way to this port, due or not.
  size_t pending() const { return queue_.size(); }
  // Delivery time of the earliest of them, or kNever.
  uint64_t next_delivery_ns() const { return queue_.empty() ? kNever : queue_.top().deliver_ns; }

 private:
  friend class SimWire;
  struct Later {
    bool operator()(const InFlight& a, const InFlight& b) const {
      return a.deliver_ns != b.deliver_ns ? a.deliver_ns > b.deliver_ns : a.seq > b.seq;
    }
  };
  using Queue = std::priority_queue<InFlight, std::vector<InFlight>, Later>;

  void enqueue(const InFlight& f) { queue_.push(f); }

  SimWire& wire_;
  uint32_t index_;
  wire::MacAddr mac_;
  uint16_t mtu_;
  Queue queue_;
};

}  // namespace uroce::sim
