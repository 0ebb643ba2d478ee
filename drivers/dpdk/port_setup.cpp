// SPDX-License-Identifier: BSD-3-Clause
#include "port_setup.h"

#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include <algorithm>
#include <atomic>
#include <cstring>

#include "mtu_plan.h"

namespace uroce::dpdk {
namespace {

std::string err_text(int rc) { return std::string(rte_strerror(rc < 0 ? -rc : rc)); }

rte_mempool* make_pool(uint32_t n, uint16_t data_room, int socket) {
  static std::atomic<unsigned> serial{0};
  const std::string name = "uroce_rx" + std::to_string(serial.fetch_add(1));
  const unsigned cache = std::min<unsigned>(256, n / 2);
  return rte_pktmbuf_pool_create(name.c_str(), n, cache, 0, data_room, socket);
}

}  // namespace

bool setup_port(uint16_t port_id, const std::string& label, const DpdkPortConfig& config, PortSetup& out,
                std::string& error) {
  rte_eth_dev_info info{};
  int rc = rte_eth_dev_info_get(port_id, &info);
  if (rc != 0) {
    error = "port " + label + ": cannot read device info: " + err_text(rc);
    return false;
  }
  out.driver = info.driver_name ? info.driver_name : "";
  out.if_index = info.if_index;

  MtuPlan plan;
  if (!plan_mtu(info, config.dev, config.mtu, label, plan, error)) return false;
  out.notices = plan.notices;
  out.mtu = plan.mtu;

  const uint16_t nq = config.queues;
  if (nq == 0 || nq > info.max_rx_queues || nq > info.max_tx_queues) {
    error = "port " + label + ": " + std::to_string(nq) + " queue pairs asked for; " + out.driver + " has 1 to " +
            std::to_string(std::min(info.max_rx_queues, info.max_tx_queues));
    return false;
  }
  uint16_t rxd = config.rx_desc, txd = config.tx_desc;
  if (config.rx_mbufs < uint32_t(rxd) + 64) {
    error = "port " + label + ": rx_mbufs (" + std::to_string(config.rx_mbufs) +
            ") must exceed rx_desc (" + std::to_string(rxd) + ") by at least a few bursts";
    return false;
  }

  rte_eth_conf conf{};
  conf.rxmode.mtu = plan.ethdev_mtu;
  // The library needs no offload; chained TX mbufs and the IPv4 header
  // checksum are left to the port where it has them.
  if (info.tx_offload_capa & RTE_ETH_TX_OFFLOAD_MULTI_SEGS) conf.txmode.offloads |= RTE_ETH_TX_OFFLOAD_MULTI_SEGS;
  if (info.tx_offload_capa & RTE_ETH_TX_OFFLOAD_IPV4_CKSUM) {
    conf.txmode.offloads |= RTE_ETH_TX_OFFLOAD_IPV4_CKSUM;
    out.tx_ipv4_checksum = true;
  }
  // Segments pointing into application memory need that memory's IOVA.
  // Software ports (no bus device behind them) read by virtual address; a
  // NIC can DMA from DPDK memory, whose IOVA is its virtual address when
  // EAL runs IOVA-as-VA (other memory is not mapped for it).
  // By driver name, not by bus: failsafe, bonding and virtio_user are vdevs
  // with DMA (a NIC, vhost) behind them.
  static const char* const kByAddress[] = {"net_af_packet", "net_af_xdp", "net_memif", "net_ring",
                                           "net_tap", "net_pcap", "net_null"};
  bool software = false;
  for (const char* d : kByAddress) software |= info.driver_name && std::strcmp(info.driver_name, d) == 0;
  if (conf.txmode.offloads & RTE_ETH_TX_OFFLOAD_MULTI_SEGS) {
    if (software) out.tx_chains = TxChains::any_memory;
    else if (rte_eal_iova_mode() == RTE_IOVA_VA) out.tx_chains = TxChains::dpdk_memory;
  }
  // Receive interrupts where they need no particular binding: the tap
  // queue's own descriptor, mlx5's completion channel. A NIC behind
  // vfio-pci has them too, but its start would fail without MSI-X vectors.
  static const char* const kRxInterrupts[] = {"net_tap", "mlx5_pci"};
  if (config.rx_interrupts) {
    for (const char* d : kRxInterrupts) out.rx_interrupt |= info.driver_name && std::strcmp(info.driver_name, d) == 0;
    if (!out.rx_interrupt)
      out.notices.push_back(out.driver + ": no receive interrupt used: an idle engine naps and looks");
  }
  conf.intr_conf.rxq = out.rx_interrupt ? 1 : 0;
  // Several queues: RSS on what tells QPs apart (addresses and UDP ports),
  // where the port hashes UDP; frames it does not hash (ARP, ND) go to
  // queue 0 on NICs.
  constexpr uint64_t kUdpHash = RTE_ETH_RSS_NONFRAG_IPV4_UDP | RTE_ETH_RSS_NONFRAG_IPV6_UDP;
  if (nq > 1 && (info.flow_type_rss_offloads & kUdpHash)) {
    conf.rxmode.mq_mode = RTE_ETH_MQ_RX_RSS;
    conf.rx_adv_conf.rss_conf.rss_hf = info.flow_type_rss_offloads & kUdpHash;
    out.rss = true;
  } else if (nq > 1) {
    out.notices.push_back(out.driver + " has no RSS on UDP: queue q receives what arrives on it (a ring's "
                          "peer queue q, af_packet's fanout)");
  }
  rc = rte_eth_dev_configure(port_id, nq, nq, &conf);
  if (rc != 0 && out.rx_interrupt) {
    out.notices.push_back(out.driver + " refused receive interrupts (" + err_text(rc) + "): an idle engine naps");
    out.rx_interrupt = false;
    conf.intr_conf.rxq = 0;
    rc = rte_eth_dev_configure(port_id, nq, nq, &conf);
  }
  if (rc != 0) {
    error = "port " + label + ": rte_eth_dev_configure (" + std::to_string(nq) + " queue pair(s), MTU " +
            std::to_string(plan.ethdev_mtu) + ") failed: " + err_text(rc);
    return false;
  }
  rc = rte_eth_dev_adjust_nb_rx_tx_desc(port_id, &rxd, &txd);
  if (rc != 0) {
    error = "port " + label + ": cannot adjust descriptor counts: " + err_text(rc);
    return false;
  }

  const int socket = rte_eth_dev_socket_id(port_id);
  std::vector<rte_mempool*> pools;
  auto fail = [&](const std::string& what, int code) {
    error = "port " + label + ": " + what + ": " + err_text(code);
    for (rte_mempool* p : pools) rte_mempool_free(p);
    return false;
  };
  // A pool per queue: each lcore's receive allocates from its own.
  for (uint16_t q = 0; q < nq; ++q) {
    rte_mempool* pool = make_pool(config.rx_mbufs, plan.data_room, socket);
    if (pool == nullptr)
      return fail("cannot create an RX pool of " + std::to_string(config.rx_mbufs) + " mbufs of " +
                      std::to_string(plan.data_room) + " bytes (lower rx_mbufs, or give EAL more memory)",
                  rte_errno);
    pools.push_back(pool);
    const std::string which = nq > 1 ? " " + std::to_string(q) : "";
    rc = rte_eth_rx_queue_setup(port_id, q, rxd, socket < 0 ? SOCKET_ID_ANY : unsigned(socket), nullptr, pool);
    if (rc != 0) return fail("RX queue" + which + " setup (" + std::to_string(rxd) + " descriptors, mbuf data room " +
                                 std::to_string(plan.data_room) + ") failed", rc);
    rc = rte_eth_tx_queue_setup(port_id, q, txd, socket < 0 ? SOCKET_ID_ANY : unsigned(socket), nullptr);
    if (rc != 0) return fail("TX queue" + which + " setup (" + std::to_string(txd) + " descriptors) failed", rc);
  }

  // The ring PMD has no MAC of its own (all zeros) and cannot set one; it
  // has no address filter either, so the MAC lives in software there.
  const bool ring = out.driver == "net_ring";
  bool soft_mac = false;
  if (config.mac) {
    rte_ether_addr addr;
    std::memcpy(addr.addr_bytes, config.mac->bytes.data(), 6);
    rc = rte_eth_dev_default_mac_addr_set(port_id, &addr);
    if (rc == -ENOTSUP && !ring) {
      // Receive frames for the new MAC through promiscuous mode instead.
      const int prc = rte_eth_promiscuous_enable(port_id);
      if (prc != 0) return fail("cannot set MAC " + config.mac->to_string() + " nor turn promiscuous mode on", prc);
      out.notices.push_back(out.driver + " cannot change its MAC: using " + config.mac->to_string() +
                            " in software, with promiscuous mode on");
    } else if (rc != 0 && !ring) {
      return fail("cannot set MAC " + config.mac->to_string(), rc);
    }
    soft_mac = rc != 0;
  }

  if (plan.set_mtu) {
    rc = rte_eth_dev_set_mtu(port_id, plan.ethdev_mtu);
    if (rc == -ENOTSUP) {
      // The ring PMD has no wire and no MTU; for the others say so.
      if (out.driver != "net_ring")
        out.notices.push_back(out.driver + " does not implement MTU changes: the device's own MTU applies (" +
                              std::to_string(plan.mtu) + " assumed)");
    } else if (rc != 0) {
      return fail("cannot set MTU " + std::to_string(plan.ethdev_mtu), rc);
    }
  }

  if (config.mac && !soft_mac) {
    // Only frames for the overriding MAC are wanted.
    rc = rte_eth_promiscuous_disable(port_id);
    if (rc != 0 && rc != -ENOTSUP) out.notices.push_back("cannot turn promiscuous mode off: " + err_text(rc));
  }

  rc = rte_eth_dev_start(port_id);
  if (rc != 0) return fail("rte_eth_dev_start failed", rc);

  // IPv6 neighbour solicitations for our GIDs go to solicited-node groups
  // (33:33:ff:xx:xx:xx), which a NIC filters out unless it takes
  // multicast; the engine drops every other group frame in software.
  // Software ports deliver multicast anyway (and may not implement this).
  rc = rte_eth_allmulticast_enable(port_id);
  if (rc != 0 && rc != -ENOTSUP)
    out.notices.push_back("cannot turn all-multicast on (IPv6 peers may not resolve this port): " + err_text(rc));

  if (soft_mac) {
    out.mac = *config.mac;
  } else {
    rte_ether_addr addr{};
    rc = rte_eth_macaddr_get(port_id, &addr);
    if (rc != 0) {
      rte_eth_dev_stop(port_id);
      return fail("cannot read the MAC address", rc);
    }
    std::memcpy(out.mac.bytes.data(), addr.addr_bytes, 6);
    if (ring && rte_is_zero_ether_addr(&addr)) {
      // A distinct, locally administered unicast MAC per ring port.
      out.mac.bytes = {0x02, 'u', 'r', 0, uint8_t(port_id >> 8), uint8_t(port_id)};
    }
  }
  out.pools = std::move(pools);
  return true;
}

}  // namespace uroce::dpdk
