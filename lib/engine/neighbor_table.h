// SPDX-License-Identifier: BSD-3-Clause
// IP -> MAC for the peers a device talks to, learned from ARP/ND replies
// (and from requests aimed at us, as Linux does) or set statically.
// Resolution is driven by the engine's poll: a request now, repeats every
// retry interval, and failure at the deadline. Off the packet path: QPs
// copy the MAC into their header template when they connect.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "uroce/verbs/types.h"
#include "uroce/wire/eth.h"
#include "uroce/wire/ip_addr.h"

namespace uroce::engine {

class NeighborTable {
 public:
  NeighborTable(uint64_t retry_ns, uint64_t timeout_ns) : retry_ns_(retry_ns), timeout_ns_(timeout_ns) {}

  // A static entry: permanent, never overwritten by what is learned.
  void set(const wire::IpAddr& ip, const wire::MacAddr& mac);
  // What ARP/ND taught; ignored for static entries.
  void learn(const wire::IpAddr& ip, const wire::MacAddr& mac);
  bool lookup(const wire::IpAddr& ip, wire::MacAddr& mac) const;
  NeighborState state(const wire::IpAddr& ip) const;
  // Starts resolving unless known or already resolving (a failed entry
  // starts over). True if a request should go out now.
  bool start(const wire::IpAddr& ip, uint64_t now);
  // Entries whose request is due again (pushed into `due`); entries past
  // their deadline become failed.
  void expire(uint64_t now, std::vector<wire::IpAddr>& due);
  // Earliest retry time of a resolving entry, or UINT64_MAX.
  uint64_t next_deadline() const;
  bool learning(const wire::IpAddr& ip) const { return state(ip) == NeighborState::resolving; }

  // At most this many entries, as Linux bounds its own (gc_thresh3): ARP
  // and ND requests aimed at us from any sender address, and clients asking
  // for any destination, would otherwise grow the table without end.
  static constexpr size_t kCapacity = 16384;
  size_t size() const { return entries_.size(); }

 private:
  struct Entry {
    NeighborState state = NeighborState::unknown;
    wire::MacAddr mac;
    uint64_t next_try = 0;
    uint64_t deadline = 0;
    bool fixed = false;  // static
  };
  static std::string key(const wire::IpAddr& ip) { return std::string(ip.bytes.begin(), ip.bytes.end()); }
  // The entry for `ip`, made if need be; nullptr when the table is full of
  // entries that must stay (static or resolving).
  Entry* slot(const wire::IpAddr& ip);

  uint64_t retry_ns_;
  uint64_t timeout_ns_;
  size_t resolving_ = 0;
  std::unordered_map<std::string, Entry> entries_;
};

}  // namespace uroce::engine
