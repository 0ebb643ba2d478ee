// SPDX-License-Identifier: BSD-3-Clause
// Configuration of an ethdev port for uroce: its queue pairs (RSS over
// them where the port has it), an RX pool per queue sized for the MTU, the
// MTU and MAC, then start.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "uroce/port/dpdk_port.h"

struct rte_mempool;

namespace uroce::dpdk {

struct PortSetup {
  uint16_t mtu = 0;
  std::string driver;
  unsigned if_index = 0;  // the kernel interface behind the port, 0 if none
  wire::MacAddr mac{};
  std::vector<rte_mempool*> pools;  // one per queue, owned by the caller after success
  bool rss = false;                 // received frames spread over the queues by hash
  std::vector<std::string> notices;
  TxChains tx_chains = TxChains::none;
  bool tx_ipv4_checksum = false;  // RTE_ETH_TX_OFFLOAD_IPV4_CKSUM enabled
  bool rx_interrupt = false;      // intr_conf.rxq on (DpdkPortConfig::rx_interrupts)
};

// `label` names the port in messages. On failure nothing is left
// allocated, the port is not started, and `error` says why.
bool setup_port(uint16_t port_id, const std::string& label, const DpdkPortConfig& config, PortSetup& out,
                std::string& error);

}  // namespace uroce::dpdk
