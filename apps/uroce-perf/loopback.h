// SPDX-License-Identifier: BSD-3-Clause
// --loopback: both endpoints in this process, each with its own engine,
// joined by a pair of real DPDK ethdev ports (the ring PMD) so nothing
// needs a NIC or hugepages.
#pragma once

#include <memory>
#include <string>

#include "uroce/capture/capturing_port.h"
#include "uroce/capture/pcap_file.h"
#include "uroce/port/dpdk_port.h"
#include "uroce/port/tsc_clock.h"
#include "uroce/verbs/device.h"

namespace uroce::perf {

struct Loopback {
  TscClock clock;
  std::unique_ptr<DpdkPort> port_a, port_b;
  std::unique_ptr<capture::PcapWriter> pcap;
  std::unique_ptr<capture::CapturingPort> cap_a, cap_b;
  std::unique_ptr<Device> server, client;

  // Ethernet MTU of the link; pcap_path empty for no capture.
  // Both devices run congestion control `cc`, and nap after idle_sleep_us
  // (DeviceConfig::idle_sleep_max_us) when their engines run threaded (-e).
  bool open(uint16_t mtu, const std::string& pcap_path, const cc::CcConfig& cc, uint32_t idle_sleep_us,
            std::string& error);
  void poll() {
    client->poll();
    server->poll();
  }
  ~Loopback();
};

}  // namespace uroce::perf
