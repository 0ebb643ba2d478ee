// SPDX-License-Identifier: BSD-3-Clause
// A DpdkPort for a test: small pools and rings (the tests run several ports
// in one --no-huge process), and a Catch failure naming the device and the
// reason when it cannot be opened.
#pragma once

#include <catch2/catch.hpp>

#include <memory>
#include <string>

#include "uroce/port/dpdk_port.h"

namespace uroce::test {

inline std::unique_ptr<DpdkPort> open_test_port(const std::string& dev, uint16_t mtu = 1500, uint16_t queues = 1) {
  DpdkPortConfig c;
  c.dev = dev;
  c.mtu = mtu;
  c.queues = queues;
  c.rx_mbufs = 2047;
  c.rx_desc = c.tx_desc = 512;
  std::string error;
  auto p = DpdkPort::open(c, error);
  INFO("opening " << c.dev << ": " << error);
  REQUIRE(p);
  return p;
}

}  // namespace uroce::test
