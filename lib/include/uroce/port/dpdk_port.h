// SPDX-License-Identifier: BSD-3-Clause
// A DPDK ethdev port as a PacketPort: one RX and one TX queue (or several
// queue pairs, each a PacketPort of its own: queue()), an RX mempool per
// queue sized for the MTU. The library needs no offload; it uses
// multi-segment TX and IPv4 header checksum offload where the port has
// them (the ICRC is always computed in software). Opened from a PCI
// address or a vdev string; see docs/ports.md.
#pragma once

#include "uroce/api.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "uroce/port/packet_port.h"
#include "uroce/wire/eth.h"

struct rte_device;

namespace uroce {
namespace dpdk {
class RxSleep;
}

struct DpdkPortConfig {
  // A PCI address ("0000:3b:00.0", also listed in EalConfig::pci) or a
  // vdev string, e.g. "net_af_packet0,iface=veth0".
  std::string dev{};
  // Requested Ethernet MTU; clamped to what the PMD supports, with a notice.
  uint16_t mtu = 1500;
  uint16_t rx_desc = 1024, tx_desc = 1024;
  uint32_t rx_mbufs = 8191;
  // Overrides the port's MAC (and turns promiscuous mode off if it can).
  std::optional<wire::MacAddr> mac{};
  // Asks for the receive queue's interrupt where the PMD has one that
  // needs no particular binding (net_tap, mlx5), so that an idle engine
  // thread sleeps until a frame arrives instead of napping and looking.
  bool rx_interrupts = false;
  // Queue pairs (1 to the port's maximum), one per engine lcore. With more
  // than one, a port with RSS on UDP spreads received frames over its
  // queues by addresses and UDP ports (all of a QP's frames carry its UDP
  // source port, so they keep to one queue); af_packet's kernel fanout
  // hashes the same; a ring pair delivers on queue q what the peer sent on
  // its queue q. Each queue has a pool of rx_mbufs of its own. The receive
  // interrupt is queue 0's. See docs/ports.md, "Queue pairs".
  uint16_t queues = 1;
};

class UROCE_API DpdkPort final : public PacketPort {
 public:
  // nullptr and a message naming the device and the reason on failure.
  static std::unique_ptr<DpdkPort> open(const DpdkPortConfig& config, std::string& error);
  // Stops and closes the port, frees its RX pool; a vdev this port probed
  // is removed (so the same vdev string can be opened again). Destroy the
  // Device using this port first: received mbufs come from this port's pool.
  ~DpdkPort() override;
  DpdkPort(const DpdkPort&) = delete;
  DpdkPort& operator=(const DpdkPort&) = delete;

  uint16_t rx_burst(rte_mbuf** pkts, uint16_t n) override;  // queue 0
  uint16_t tx_burst(rte_mbuf** pkts, uint16_t n) override;  // queue 0
  // Queue pair q (0 .. queues() - 1) as a port of its own, with this
  // port's MAC, MTU and offloads; queue(0) is this port (std::out_of_range
  // past the last). One thread at a time per queue, as for any PacketPort.
  // Valid while this port lives.
  uint16_t queues() const { return uint16_t(1 + more_queues_.size()); }
  PacketPort& queue(uint16_t q);
  // Whether received frames are spread over the queues by hash (RSS).
  bool rss() const { return rss_; }
  wire::MacAddr mac() const override { return mac_; }
  uint16_t mtu() const override { return mtu_; }
  TxChains tx_chains() const override { return tx_chains_; }
  bool tx_ipv4_checksum() const override { return tx_ipv4_checksum_; }
  bool has_rx_interrupt() const override { return rx_sleep_ != nullptr; }
  bool rx_sleep(uint64_t ns, int wake_fd) override;
  // Sleeps that a frame ended (rx_sleep): the interrupt at work.
  uint64_t rx_interrupt_wakeups() const;

  uint16_t port_id() const { return port_id_; }
  // The ethdev name (PCI address or vdev name, without arguments).
  const std::string& name() const { return name_; }
  bool link_up() const;
  // The PMD driver name, e.g. "net_af_packet", "mlx5_pci".
  const std::string& driver() const { return driver_; }
  // What open() adjusted or could not do (also printed on stderr).
  const std::vector<std::string>& notices() const { return notices_; }

 private:
  DpdkPort();
  friend bool open_ring_pair(const std::string&, uint16_t, std::unique_ptr<DpdkPort>&,
                             std::unique_ptr<DpdkPort>&, std::string&, uint16_t);
  friend struct DpdkPortBuilder;
  class Queue;
  void add_queues(uint16_t queues);

  uint16_t port_id_ = 0;
  std::string name_;
  std::string driver_;
  wire::MacAddr mac_{};
  uint16_t mtu_ = 0;
  TxChains tx_chains_ = TxChains::none;
  bool tx_ipv4_checksum_ = false;
  bool rss_ = false;
  std::vector<rte_mempool*> pools_;           // one per queue
  std::vector<std::unique_ptr<PacketPort>> more_queues_;  // queues 1..
  rte_device* remove_on_close_ = nullptr;  // a vdev we probed
  std::shared_ptr<void> keep_alive_;         // the rings of a ring pair
  std::vector<std::string> notices_;
  std::unique_ptr<dpdk::RxSleep> rx_sleep_;  // with the receive interrupt
};

// Two ethdev ports joined back to back by two rte_rings (the ring PMD,
// rte_eth_from_rings): what one sends the other receives, by pointer, in
// order, never dropped while the ring has room. Real ethdev ports with no
// NIC and no hugepages. `name` (at most 20 characters, no commas) names
// the ethdev ports "net_ring_<name>_a" and "net_ring_<name>_b". The ring
// PMD has no MAC: each port gets a locally administered one (02:75:72:...).
// With `queues` queue pairs, a pair of rings joins each queue q of one port
// to queue q of the other.
UROCE_API bool open_ring_pair(const std::string& name, uint16_t mtu, std::unique_ptr<DpdkPort>& a,
                    std::unique_ptr<DpdkPort>& b, std::string& error, uint16_t queues = 1);

}  // namespace uroce
