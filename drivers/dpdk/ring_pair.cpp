// SPDX-License-Identifier: BSD-3-Clause
// open_ring_pair: two ring-PMD ports joined back to back by two rte_rings.
#include <rte_errno.h>
#include <rte_eth_ring.h>
#include <rte_ethdev.h>
#include <rte_ring.h>

#include <vector>

#include "open_ports.h"
#include "port_setup.h"
#include "uroce/port/dpdk_port.h"
#include "uroce/port/eal.h"

namespace uroce {
namespace {

constexpr unsigned kRingSize = 4096;  // 4095 frames in flight each way
constexpr size_t kMaxName = 20;       // rte_eth_from_rings truncates "net_ring_<name>_a" at 31

// Frees the rings when both ports are gone. Frames still in a ring are
// not freed: their pool (a Device's) may already be gone.
struct Rings {
  std::vector<rte_ring*> ab, ba;  // per queue pair
  ~Rings() {
    for (rte_ring* r : ab) rte_ring_free(r);
    for (rte_ring* r : ba) rte_ring_free(r);
  }
};

}  // namespace

bool open_ring_pair(const std::string& name, uint16_t mtu, std::unique_ptr<DpdkPort>& a,
                    std::unique_ptr<DpdkPort>& b, std::string& error, uint16_t queues) {
  if (name.empty() || name.size() > kMaxName || name.find(',') != std::string::npos) {
    error = "ring pair '" + name + "': the name must have 1 to " + std::to_string(kMaxName) + " characters, no commas";
    return false;
  }
  if (!eal_initialized()) {
    error = "ring pair " + name + ": the DPDK EAL is not initialised (call eal_init first)";
    return false;
  }
  if (queues == 0 || queues > RTE_MAX_QUEUES_PER_PORT) {
    error = "ring pair " + name + ": " + std::to_string(queues) + " queue pairs asked for; 1 to " +
            std::to_string(RTE_MAX_QUEUES_PER_PORT) + " can be made";
    return false;
  }
  auto rings = std::make_shared<Rings>();
  for (uint16_t q = 0; q < queues; ++q) {
    // The first pair keeps the names a one-queue pair has always had.
    const std::string tail = q ? std::to_string(q) : "";
    rte_ring* ab = rte_ring_create((name + "_ab" + tail).c_str(), kRingSize, SOCKET_ID_ANY, RING_F_SP_ENQ | RING_F_SC_DEQ);
    rte_ring* ba = ab ? rte_ring_create((name + "_ba" + tail).c_str(), kRingSize, SOCKET_ID_ANY,
                                        RING_F_SP_ENQ | RING_F_SC_DEQ)
                      : nullptr;
    if (ab) rings->ab.push_back(ab);
    if (ba) rings->ba.push_back(ba);
    if (!ab || !ba) {
      error = "ring pair " + name + ": cannot create its rings: " + rte_strerror(rte_errno) +
              (rte_errno == EEXIST ? " (a ring pair of that name is open)" : "");
      return false;
    }
  }

  std::unique_ptr<DpdkPort> ports[2];
  std::vector<rte_ring*>* rx[2] = {&rings->ba, &rings->ab};
  std::vector<rte_ring*>* tx[2] = {&rings->ab, &rings->ba};
  for (int i = 0; i < 2; ++i) {
    const std::string pname = name + (i == 0 ? "_a" : "_b");
    const int id = rte_eth_from_rings(pname.c_str(), rx[i]->data(), queues, tx[i]->data(), queues, SOCKET_ID_ANY);
    if (id < 0) {
      error = "ring pair " + name + ": cannot create port " + pname + ": " + rte_strerror(rte_errno);
      return false;  // ports[0], if made, closes itself
    }
    const uint16_t port_id = uint16_t(id);
    rte_eth_dev_info info{};
    rte_eth_dev_info_get(port_id, &info);
    rte_device* device = info.device;
    if (!dpdk::claim_port(port_id)) {
      error = "ring pair " + name + ": port " + pname + " is already open";
      rte_eth_dev_close(port_id);
      rte_dev_remove(device);
      return false;
    }
    DpdkPortConfig config;
    config.dev = pname;
    config.mtu = mtu;
    config.rx_desc = config.tx_desc = 256;
    config.rx_mbufs = 511;  // the ring PMD never allocates from it
    config.queues = queues;
    dpdk::PortSetup setup;
    if (!dpdk::setup_port(port_id, pname, config, setup, error)) {
      dpdk::release_port(port_id);
      rte_eth_dev_close(port_id);
      rte_dev_remove(device);
      return false;
    }
    ports[i].reset(new DpdkPort());
    DpdkPort& p = *ports[i];
    p.port_id_ = port_id;
    char ethdev_name[RTE_ETH_NAME_MAX_LEN] = {};
    rte_eth_dev_get_name_by_port(port_id, ethdev_name);
    p.name_ = ethdev_name;
    p.driver_ = setup.driver;
    p.mac_ = setup.mac;
    p.mtu_ = setup.mtu;
    p.tx_chains_ = setup.tx_chains;
    p.tx_ipv4_checksum_ = setup.tx_ipv4_checksum;
    p.pools_ = std::move(setup.pools);
    p.add_queues(queues);
    p.remove_on_close_ = device;
    p.keep_alive_ = rings;
    p.notices_ = std::move(setup.notices);
  }
  a = std::move(ports[0]);
  b = std::move(ports[1]);
  return true;
}

}  // namespace uroce
