// SPDX-License-Identifier: BSD-3-Clause
// DpdkPort::open failures: each one returns nullptr with a message that
// names the device and says why, and leaves no port behind.
#include <catch2/catch.hpp>

#include <rte_ethdev.h>

#include "uroce/port/dpdk_port.h"
#include "uroce/port/eal.h"

namespace uroce::test {
namespace {

bool mentions(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }

// Opens `dev` expecting failure; returns the message.
std::string open_fails(const DpdkPortConfig& config) {
  const uint16_t ports_before = rte_eth_dev_count_avail();
  std::string error;
  auto p = DpdkPort::open(config, error);
  INFO("device " << config.dev << ": " << error);
  CHECK_FALSE(p);
  CHECK_FALSE(error.empty());
  CHECK(rte_eth_dev_count_avail() == ports_before);
  return error;
}

}  // namespace

TEST_CASE("eal_init is a no-op returning true when the EAL is already up", "[bad-device]") {
  REQUIRE(eal_initialized());
  std::string error;
  CHECK(eal_init(EalConfig{.args = {"--this-flag-would-fail"}}, error));
  CHECK(error.empty());
}

TEST_CASE("an unknown vdev driver is refused, naming the device", "[bad-device]") {
  const std::string e = open_fails({.dev = "net_nosuchpmd0,foo=bar"});
  CHECK(mentions(e, "no such DPDK device or driver: net_nosuchpmd0"));
}

TEST_CASE("af_packet on an interface that does not exist is refused, naming the device", "[bad-device]") {
  const std::string e = open_fails({.dev = "net_af_packet7,iface=uroce-none0"});
  CHECK(mentions(e, "net_af_packet7"));
  CHECK(mentions(e, "no such network interface: uroce-none0"));
  uint16_t id;
  CHECK(rte_eth_dev_get_port_by_name("net_af_packet7", &id) != 0);
}

TEST_CASE("a PCI address that is not allowed or does not exist is refused, naming the device", "[bad-device]") {
  const std::string e = open_fails({.dev = "0000:ff:1f.7"});
  CHECK(mentions(e, "no such PCI device: 0000:ff:1f.7"));
}

TEST_CASE("an empty device string is refused", "[bad-device]") {
  const std::string e = open_fails({.dev = ""});
  CHECK(mentions(e, "no device"));
  open_fails({.dev = ",iface=x"});
}

TEST_CASE("an MTU below the minimum is refused, and the vdev is not left behind", "[bad-device]") {
  const std::string e = open_fails({.dev = "net_ring5", .mtu = 40});
  CHECK(mentions(e, "net_ring5"));
  CHECK(mentions(e, "MTU 40"));
  uint16_t id;
  CHECK(rte_eth_dev_get_port_by_name("net_ring5", &id) != 0);
  // ...and the same vdev opens fine with a valid MTU.
  std::string error;
  auto p = DpdkPort::open({.dev = "net_ring5"}, error);
  INFO(error);
  CHECK(p);
}

TEST_CASE("too few RX mbufs for the descriptors is refused", "[bad-device]") {
  const std::string e = open_fails({.dev = "net_ring6", .rx_desc = 1024, .rx_mbufs = 512});
  CHECK(mentions(e, "net_ring6"));
  CHECK(mentions(e, "rx_mbufs"));
}

}  // namespace uroce::test
