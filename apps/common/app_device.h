// What uroce-perf and uroce-pingpong share to face a peer over a real port:
// start the EAL, open the port (--dev), optionally capture it (--pcap), open
// a Device with the endpoint's address (--ip, --mac), and resolve the
// peer's MAC by ARP/ND while the engine polls.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "uroce/capture/capturing_port.h"
#include "uroce/capture/pcap_file.h"
#include "uroce/port/dpdk_port.h"
#include "uroce/port/tsc_clock.h"
#include "uroce/verbs/device.h"

namespace uroce::app {

struct PortOptions {
  std::string dev;   // PCI address or vdev string (required)
  std::string ip;    // IPv4 or IPv6 address of this endpoint (required)
  std::string mac;   // overrides the port's MAC
  std::string eal;   // extra EAL arguments, split on spaces
  std::string pcap;  // capture every frame of the port to this file
  uint16_t mtu = 1500;  // Ethernet MTU to ask of the port
  std::string name = "uroce0";
  cc::CcConfig cc;      // congestion control of the device's QPs
};

struct AppDevice {
  // Made once the EAL runs: a TscClock made before it has no TSC frequency
  // and reads clock_gettime on every engine poll instead of the TSC.
  std::optional<TscClock> clock;
  std::unique_ptr<DpdkPort> port;
  std::unique_ptr<capture::PcapWriter> pcap;
  std::unique_ptr<capture::CapturingPort> capture;
  std::unique_ptr<Device> device;

  // false and a message naming the option or device at fault.
  bool open(const PortOptions& o, std::string& error);
  // GID 0 of the device: the endpoint's address.
  const wire::IpAddr& gid() const { return device->gids()[0]; }
  // ARP (IPv4) or neighbour solicitation (IPv6) for `peer`, polling the
  // device until it answers or `timeout` passes.
  bool resolve(const wire::IpAddr& peer, std::chrono::milliseconds timeout, std::string& error);
  void poll() { device->poll(); }
  // Writes out what the capture holds (also done by the destructor).
  void flush_capture();
  ~AppDevice();
};

// Ends the process once every port and device is closed and stdio is
// flushed, without the C library's teardown: DPDK's interrupt thread may
// be handling a peer's disconnect (memif) at that moment, and exit() or
// rte_eal_cleanup() unmapping memory under it crashes it.
[[noreturn]] void exit_now(int status);

}  // namespace uroce::app
