// SPDX-License-Identifier: BSD-3-Clause
// The packet I/O interface every backend implements: a DPDK ethdev queue
// pair, or the simulated wire. Calls are per burst, never per packet, so
// the one virtual call is spread over up to a burst of frames.
#pragma once

#include "uroce/api.h"

#include <cstdint>

#include "uroce/wire/eth.h"

struct rte_mbuf;
struct rte_mempool;

namespace uroce {

// Whether a port sends chained mbufs whose segments point into application
// memory (zero-copy TX), and which memory it can read that way.
enum class TxChains {
  none,         // every frame in one segment of the port's own pool
  dpdk_memory,  // chains, from DPDK memory only (a NIC's DMA needs its IOVA)
  any_memory,   // chains, read by virtual address (software ports)
};

class UROCE_API PacketPort {
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
  // Asked once, at device open: large payloads go out from registered
  // memory without a copy where the answer allows it.
  virtual TxChains tx_chains() const { return TxChains::none; }
  // Asked once, at device open: whether the port fills in the IPv4 header
  // checksum of frames flagged RTE_MBUF_F_TX_IP_CKSUM (with l2_len and
  // l3_len set), so the engine leaves it zero.
  virtual bool tx_ipv4_checksum() const { return false; }
  // Asked once, when an engine thread starts: whether rx_sleep can wait
  // for a frame (a receive interrupt).
  virtual bool has_rx_interrupt() const { return false; }
  // An idle engine thread's sleep: until a frame arrives, wake_fd (an
  // eventfd the thread's wakers write) is readable, or ns pass. False when
  // the port cannot (no receive interrupt): the thread naps instead.
  virtual bool rx_sleep(uint64_t ns, int wake_fd) {
    (void)ns;
    (void)wake_fd;
    return false;
  }
};

}  // namespace uroce
