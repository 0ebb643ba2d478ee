// SPDX-License-Identifier: BSD-3-Clause
#include "neighbor_table.h"

#include <algorithm>

namespace uroce::engine {

// The table is a cache: a QP copies its peer's MAC when it connects, so a
// learned or failed entry can go at any time and is asked for again when
// needed. When the table is full, every such entry goes at once (a rare
// event, off the packet path); static and resolving entries stay.
NeighborTable::Entry* NeighborTable::slot(const wire::IpAddr& ip) {
  std::string k = key(ip);
  if (auto it = entries_.find(k); it != entries_.end()) return &it->second;
  if (entries_.size() >= kCapacity)
    std::erase_if(entries_, [](const auto& kv) { return !kv.second.fixed && kv.second.state != NeighborState::resolving; });
  if (entries_.size() >= kCapacity) return nullptr;
  return &entries_[std::move(k)];
}

void NeighborTable::set(const wire::IpAddr& ip, const wire::MacAddr& mac) {
  // Configuration, not traffic: a static entry is always kept (and the
  // first one given for an address stays).
  Entry& e = entries_[key(ip)];
  if (e.fixed) return;
  if (e.state == NeighborState::resolving) --resolving_;
  e.state = NeighborState::reachable;
  e.mac = mac;
  e.fixed = true;
}

void NeighborTable::learn(const wire::IpAddr& ip, const wire::MacAddr& mac) {
  Entry* slot_for_ip = slot(ip);
  if (slot_for_ip == nullptr) return;
  Entry& e = *slot_for_ip;
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
  Entry* slot_for_ip = slot(ip);
  if (slot_for_ip == nullptr) return false;  // state() says unknown: the caller's EHOSTUNREACH
  Entry& e = *slot_for_ip;
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
