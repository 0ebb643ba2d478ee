// SPDX-License-Identifier: BSD-3-Clause
#include "sim_fabric.h"

#include <algorithm>
#include <stdexcept>

namespace uroce::sim {

SimFabric::SimFabric(uint64_t seed, uint16_t mtu) : wire_(clock_, seed), mtu_(mtu) {}

SimFabric::~SimFabric() {
  // Frames in flight belong to the devices' pools: free them first, so each
  // device can free its pool.
  wire_.drop_all();
  devices_.clear();
}

Device& SimFabric::add_device(const std::string& ip, DeviceConfig config) {
  wire::MacAddr mac;
  mac.bytes = {0x02, 0, 0, 0, 0, uint8_t(devices_.size() + 1)};
  wire::IpAddr addr;
  if (!wire::IpAddr::parse(ip, addr)) throw std::invalid_argument("SimFabric: bad IP address " + ip);
  SimPort& port = wire_.add_port(mac, mtu_);
  config.port = &port;
  config.clock = &clock_;
  config.gids.insert(config.gids.begin(), addr);
  if (config.name == DeviceConfig{}.name) config.name = "sim" + std::to_string(devices_.size());
  if (config.seed == 0) config.seed = 0x5EED0000 + devices_.size();
  std::string error;
  auto dev = Device::open(config, error);
  if (!dev) throw std::runtime_error(error);
  for (size_t i = 0; i < devices_.size() && static_neighbors; ++i) {
    dev->add_neighbor(ips_[i], ports_[i]->mac());
    devices_[i]->add_neighbor(addr, mac);
  }
  dev->add_neighbor(addr, mac);  // loopback to itself
  ports_.push_back(&port);
  ips_.push_back(addr);
  devices_.push_back(std::move(dev));
  return *devices_.back();
}

int SimFabric::poll_all() {
  int work = 0;
  for (auto& d : devices_) work += d->poll();
  return work;
}

uint64_t SimFabric::next_event() const {
  uint64_t t = wire_.next_delivery_ns();
  for (const auto& d : devices_) t = std::min(t, d->next_deadline_ns());
  return t;
}

bool SimFabric::run_until(const std::function<bool()>& pred, uint64_t max_ns) {
  const uint64_t end = clock_.now_ns() + max_ns;
  while (!pred()) {
    if (poll_all() > 0) continue;
    const uint64_t t = next_event();
    if (t == kNever || t > end) return pred();
    // Nothing could run now, so the next event is strictly later.
    clock_.advance_to(std::max(t, clock_.now_ns() + 1));
  }
  return true;
}

void SimFabric::run_for(uint64_t ns) {
  const uint64_t end = clock_.now_ns() + ns;
  run_until([&] { return false; }, ns);
  if (clock_.now_ns() < end) clock_.advance_to(end);
}

}  // namespace uroce::sim
