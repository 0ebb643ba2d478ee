// SPDX-License-Identifier: BSD-3-Clause
#include "neighbor_table.h"

#include <algorithm>

namespace uroce::engine {

void NeighborTable::set(const wire::IpAddr& ip, const wire::MacAddr& mac) {
  learn(ip, mac);
  entries_[key(ip)].fixed = true;
}

void NeighborTable::learn(const wire::IpAddr& ip, const wire::MacAddr& mac) {
  Entry& e = entries_[key(ip)];
  if (e.fixed) return;
  if (e.state == NeighborState::resolving) --resolving_;
  e.state = NeighborState::reachable;
  e.mac = mac;
}

bool NeighborTable::lookup(const wire::IpAddr& ip, wire::MacAddr& mac) const {
  auto it = entries_.find(key(ip));
  if (it == entries_.end() || it->second.state != NeighborState::reachable) return false;
  mac = it->second.mac;
  return true;
}

NeighborState NeighborTable::state(const wire::IpAddr& ip) const {
  auto it = entries_.find(key(ip));
  return it == entries_.end() ? NeighborState::unknown : it->second.state;
}

bool NeighborTable::start(const wire::IpAddr& ip, uint64_t now) {
  Entry& e = entries_[key(ip)];
  if (e.state == NeighborState::reachable || e.state == NeighborState::resolving) return false;
  e.state = NeighborState::resolving;
  e.next_try = now + retry_ns_;
  e.deadline = now + timeout_ns_;
  ++resolving_;
  return true;
}

void NeighborTable::expire(uint64_t now, std::vector<wire::IpAddr>& due) {
  if (resolving_ == 0) return;
  for (auto& [k, e] : entries_) {
    if (e.state != NeighborState::resolving) continue;
    if (now >= e.deadline) {
      e.state = NeighborState::failed;
      --resolving_;
    } else if (now >= e.next_try) {
      e.next_try = now + retry_ns_;
      wire::IpAddr ip;
      std::copy(k.begin(), k.end(), ip.bytes.begin());
      due.push_back(ip);
    }
  }
}

uint64_t NeighborTable::next_deadline() const {
  uint64_t t = UINT64_MAX;
  if (resolving_ == 0) return t;
  for (const auto& [k, e] : entries_)
    if (e.state == NeighborState::resolving) t = std::min({t, e.next_try, e.deadline});
  return t;
}

}  // namespace uroce::engine
