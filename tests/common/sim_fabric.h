// SPDX-License-Identifier: BSD-3-Clause
// Several uroce devices on one simulated wire, driven in virtual time: the
// harness the transport tests, the examples and congestion experiments
// share. run_until() polls every device and jumps the clock to the next
// event (a frame's delivery or a transport timer) whenever all are idle.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "uroce/sim/sim_wire.h"
#include "uroce/sim/virtual_clock.h"
#include "uroce/verbs/device.h"

namespace uroce::sim {

class SimFabric {
 public:
  explicit SimFabric(uint64_t seed, uint16_t mtu = 1500);
  ~SimFabric();

  // A device with its own port, MAC 02:00:00:00:00:<n> and the given IP
  // (GID 0; config.gids, if any, follow it); every device already on the
  // fabric learns its neighbours (GID 0), unless static_neighbors is false:
  // then they find each other by ARP/ND.
  Device& add_device(const std::string& ip, DeviceConfig config = {});
  bool static_neighbors = true;

  // Polls until pred() is true (returns true) or until `max_ns` of virtual
  // time passed or nothing can ever happen again (returns false).
  bool run_until(const std::function<bool()>& pred, uint64_t max_ns = 10'000'000'000ull);
  // Runs until every device is idle with no frame in flight or timer due
  // within `max_ns`.
  void run_for(uint64_t ns);

  SimWire& wire() { return wire_; }
  VirtualClock& clock() { return clock_; }
  Device& device(size_t i) { return *devices_[i]; }
  SimPort& port(size_t i) { return *ports_[i]; }
  size_t size() const { return devices_.size(); }

 private:
  int poll_all();
  uint64_t next_event() const;

  VirtualClock clock_;
  SimWire wire_;
  uint16_t mtu_;
  std::vector<SimPort*> ports_;
  std::vector<wire::IpAddr> ips_;
  std::vector<std::unique_ptr<Device>> devices_;
};

}  // namespace uroce::sim
