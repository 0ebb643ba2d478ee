// SPDX-License-Identifier: BSD-3-Clause
// DpdkPort::open: find or probe the device, configure it (port_setup.cpp),
// and give it back on destruction.
#include "uroce/port/dpdk_port.h"

#include <rte_dev.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include <cstdio>

#include "mtu_plan.h"
#include "open_ports.h"
#include "port_setup.h"
#include "probe_diagnosis.h"
#include "rx_sleep.h"
#include "teardown.h"
#include "uroce/port/eal.h"

namespace uroce {
namespace {

bool looks_like_pci(const std::string& name) { return name.find(':') != std::string::npos; }

// The ethdev port of a device name, after probing if needed.
bool find_port(const std::string& name, uint16_t& port_id) {
  if (rte_eth_dev_get_port_by_name(name.c_str(), &port_id) == 0) return true;
  rte_dev_iterator it{};
  if (rte_eth_iterator_init(&it, name.c_str()) != 0) return false;
  const uint16_t id = rte_eth_iterator_next(&it);
  rte_eth_iterator_cleanup(&it);
  if (id == RTE_MAX_ETHPORTS) return false;
  port_id = id;
  return true;
}

}  // namespace

std::unique_ptr<DpdkPort> DpdkPort::open(const DpdkPortConfig& config, std::string& error) {
  const std::string name = config.dev.substr(0, config.dev.find(','));
  if (name.empty()) {
    error = "port: no device given (a PCI address, or a vdev such as net_af_packet0,iface=eth1)";
    return nullptr;
  }
  if (!eal_initialized()) {
    error = "port " + config.dev + ": the DPDK EAL is not initialised (call eal_init first)";
    return nullptr;
  }

  uint16_t port_id = 0;
  rte_device* probed = nullptr;
  DpdkPortConfig effective = config;  // with the devargs the device was probed with
  std::string slots_notice;
  if (!find_port(name, port_id)) {
    if (error = dpdk::unknown_device(config.dev); !error.empty()) return nullptr;
    effective.dev = dpdk::af_packet_slots_for_mtu(config.dev, config.mtu, slots_notice);
    const int rc = rte_dev_probe(effective.dev.c_str());
    if (rc < 0 && rc != -EEXIST) {
      error = dpdk::probe_failure(config.dev, rc);
      return nullptr;
    }
    if (!find_port(name, port_id)) {
      error = "port " + config.dev + ": probed, but no ethdev port is named " + name +
              " (a vdev's name is the part before its first comma)";
      return nullptr;
    }
    rte_eth_dev_info info{};
    if (rc == 0 && rte_eth_dev_info_get(port_id, &info) == 0 && !looks_like_pci(name)) probed = info.device;
  }
  auto release_probed = [&] {
    if (probed) {
      rte_eth_dev_close(port_id);
      rte_dev_remove(probed);
    }
  };

  if (!dpdk::claim_port(port_id)) {
    error = "port " + config.dev + ": ethdev port " + std::to_string(port_id) + " (" + name +
            ") is already open in this process";
    return nullptr;
  }

  if (name.rfind("net_memif", 0) == 0) dpdk::remember_memif();
  dpdk::PortSetup setup;
  if (!dpdk::setup_port(port_id, config.dev, effective, setup, error)) {
    dpdk::release_port(port_id);
    release_probed();
    return nullptr;
  }

  std::unique_ptr<DpdkPort> port(new DpdkPort());
  port->port_id_ = port_id;
  port->name_ = name;
  port->driver_ = setup.driver;
  port->mac_ = setup.mac;
  port->mtu_ = setup.mtu;
  port->tx_chains_ = setup.tx_chains;
  port->tx_ipv4_checksum_ = setup.tx_ipv4_checksum;
  port->pools_ = std::move(setup.pools);
  port->rss_ = setup.rss;
  port->add_queues(config.queues);
  port->remove_on_close_ = probed;
  port->notices_ = std::move(setup.notices);
  if (setup.rx_interrupt) {
    port->rx_sleep_ = std::make_unique<dpdk::RxSleep>(port_id, 0);
    if (!port->rx_sleep_->ok()) {
      port->rx_sleep_.reset();
      port->notices_.push_back(setup.driver + ": the receive queue's interrupt cannot be watched: an idle engine naps");
    }
  }
  if (!slots_notice.empty()) port->notices_.insert(port->notices_.begin(), slots_notice);
  if (setup.driver == "net_af_xdp") dpdk::remember_xdp(port_id, setup.if_index);
  for (const std::string& n : port->notices_) std::fprintf(stderr, "uroce: port %s: %s\n", config.dev.c_str(), n.c_str());
  return port;
}

// Queue pair q of a port, for the engine that drives it.
class DpdkPort::Queue final : public PacketPort {
 public:
  Queue(const DpdkPort& port, uint16_t q) : port_(port), q_(q) {}
  uint16_t rx_burst(rte_mbuf** pkts, uint16_t n) override { return rte_eth_rx_burst(port_.port_id_, q_, pkts, n); }
  uint16_t tx_burst(rte_mbuf** pkts, uint16_t n) override { return rte_eth_tx_burst(port_.port_id_, q_, pkts, n); }
  wire::MacAddr mac() const override { return port_.mac_; }
  uint16_t mtu() const override { return port_.mtu_; }
  TxChains tx_chains() const override { return port_.tx_chains_; }
  bool tx_ipv4_checksum() const override { return port_.tx_ipv4_checksum_; }

 private:
  const DpdkPort& port_;
  const uint16_t q_;
};

DpdkPort::DpdkPort() = default;

void DpdkPort::add_queues(uint16_t queues) {
  for (uint16_t q = 1; q < queues; ++q) more_queues_.push_back(std::make_unique<Queue>(*this, q));
}

PacketPort& DpdkPort::queue(uint16_t q) { return q == 0 ? *this : *more_queues_.at(q - 1u); }

DpdkPort::~DpdkPort() {
  rx_sleep_.reset();
  rte_eth_dev_stop(port_id_);
  rte_eth_dev_close(port_id_);
  dpdk::forget_xdp(port_id_);
  if (remove_on_close_) rte_dev_remove(remove_on_close_);
  for (rte_mempool* p : pools_) rte_mempool_free(p);
  dpdk::release_port(port_id_);
}

uint16_t DpdkPort::rx_burst(rte_mbuf** pkts, uint16_t n) { return rte_eth_rx_burst(port_id_, 0, pkts, n); }
uint16_t DpdkPort::tx_burst(rte_mbuf** pkts, uint16_t n) { return rte_eth_tx_burst(port_id_, 0, pkts, n); }

bool DpdkPort::link_up() const {
  rte_eth_link link{};
  return rte_eth_link_get_nowait(port_id_, &link) == 0 && link.link_status == RTE_ETH_LINK_UP;
}

}  // namespace uroce
