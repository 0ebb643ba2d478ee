// The packet I/O interface every backend implements: a DPDK ethdev queue
// pair, or the simulated wire. Calls are per burst, never per packet, so
// the one virtual call is spread over up to a burst of frames.
#pragma once

#include <cstdint>

#include "uroce/wire/eth.h"

struct rte_mbuf;
struct rte_mempool;

namespace uroce {

class PacketPort {
 public:
  virtual ~PacketPort() = default;

  // Up to n received frames; ownership passes to the caller.
  virtual uint16_t rx_burst(rte_mbuf** pkts, uint16_t n) = 0;
  // Takes ownership of the first k frames and returns k; the caller still
  // owns (and must retry or free) the rest.
  virtual uint16_t tx_burst(rte_mbuf** pkts, uint16_t n) = 0;

  // The port's own address and its Ethernet MTU (largest IP datagram).
  virtual wire::MacAddr mac() const = 0;
  virtual uint16_t mtu() const = 0;
  // True if the port sends chained mbufs whose segments may point into
  // application memory (external buffers): then large payloads go out
  // from registered memory without a copy. Asked once, at device open.
  virtual bool tx_chains() const { return false; }
};

}  // namespace uroce
