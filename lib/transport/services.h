// SPDX-License-Identifier: BSD-3-Clause
// What the transport needs from the engine that runs it, declared on the
// transport's side (as rxe_loc.h declares what rxe's units call): time,
// transmission and packet buffers, scheduling and timers, the key table,
// neighbours and asynchronous events. The engine is the one implementation
// (engine::Engine derives from this class and defines the calls in
// engine.cpp); the transport never includes the engine's header.
//
// Nothing here is virtual: the calls go straight to the engine's code, and
// what the transport reads per packet (the time, the poll count, TX room,
// the key table) are plain members the engine keeps current.
#pragma once

#include <rte_mbuf.h>

#include <cstdint>
#include <vector>

#include "memory/mr_table.h"
#include "uroce/verbs/types.h"
#include "uroce/wire/builder.h"
#include "uroce/wire/eth.h"
#include "uroce/wire/ip_addr.h"


namespace uroce::transport {

struct Qp;

// The device's settings the transport applies.
struct TransportConfig {
  DeviceLimits limits{};
  std::vector<wire::IpAddr> gids;  // GID table: index -> RoCEv2 address
  uint32_t port_mtu = 1500;        // Ethernet MTU: the largest path MTU
  uint32_t max_unacked_psns = 128; // requester window
  uint32_t ack_req_every = 64;     // AckReq at least every N packets
  bool vlan = false;               // frames carry an 802.1Q tag ...
  uint16_t vlan_tci = 0;           // ... with the port's PCP and VLAN id
};

// The tag of a frame whose sender asked for service level `sl` (a
// connected QP's address vector or an address handle): on RoCE the SL is
// the frame's 802.1p priority, as on a NIC; 0 keeps the port's.
inline uint16_t vlan_tci_for(const TransportConfig& c, uint8_t sl) {
  return (sl & 7) ? uint16_t((c.vlan_tci & 0x1FFF) | (sl & 7) << 13) : c.vlan_tci;
}

class EngineServices {
 public:
  const TransportConfig& config() const { return config_; }

  // Time: the engine's reading of the clock at this poll (it may be a kept,
  // older time: see watch_timer), and how many polls have run.
  uint64_t now() const { return now_; }
  uint32_t poll_seq() const { return poll_seq_; }

  // Memory keys of the device.
  memory::MrTable& mrs() { return mrs_; }

  // Transmission: an mbuf for a packet (nullptr, counted, when the pool is
  // empty), and the queue it goes out on. `to_self`: the frame is for this
  // device itself (its destination MAC is ours, which the sender decided
  // once per QP or address handle, not per frame): it is handled as
  // received on the next poll, never sent.
  rte_mbuf* alloc_mbuf();
  void transmit(rte_mbuf* m, bool to_self);
  // Room for more requests and responses: the port took what was queued
  // (the backlog holds less than two bursts). A port that refuses frames
  // stops the packet builders, so what waits for the wire stays about the
  // port's own queue, however many QPs have work: frames queued here
  // beyond that only age out of the cache before they leave.
  bool tx_has_room() const { return backlog_.size() < kTxRoom; }
  // Whether the port fills in IPv4 header checksums.
  wire::Ipv4Checksum ipv4_checksum() const { return ipv4_checksum_; }
  // Zero-copy TX: payloads of at least this size go out as segments that
  // point into registered memory (0: always copy), with data-less mbufs from
  // ext_pool(); only from regions zero_copy_from() accepts.
  uint32_t zero_copy_min() const { return zero_copy_min_; }
  rte_mempool* ext_pool() const { return ext_pool_; }
  bool zero_copy_from(const memory::Region& mr) const { return zero_copy_any_memory_ || mr.dpdk_memory; }
  wire::MacAddr mac() const { return mac_; }

  // Scheduling. schedule: the QP has packets to send (or a retry to start).
  // schedule_next: from the next TX round on (an ACK held back for one poll).
  // send_now: work was posted to a QP that had none; send it without waiting
  // for the next poll. pace: congestion control holds the QP until `at` ns.
  void schedule(Qp* qp);
  void schedule_next(Qp* qp);
  void send_now(Qp* qp);
  void pace(Qp* qp, uint64_t at);
  // The QP has a timer that may need checking. Call it whenever a deadline
  // is set from now(): now() may be a kept, older time, and such deadlines
  // are moved on by the time that passed at the next reading of the clock.
  void watch_timer(Qp* qp);

  // Neighbours: the MAC of a reachable address, or start resolving it.
  bool resolve(const wire::IpAddr& ip, wire::MacAddr& mac) const;
  NeighborState resolve_neighbor(const wire::IpAddr& ip);

  // Asynchronous events, in the order they happened (control path).
  void post_async_event(const AsyncEvent& ev);

 protected:
  EngineServices(uint64_t key_seed, uint32_t max_mr, uint32_t max_mw) : mrs_(key_seed, max_mr, max_mw) {}
  ~EngineServices() = default;

  static constexpr size_t kTxBacklog = 4096;  // the hard limit: ACKs and answers to requests
  static constexpr size_t kTxRoom = 64;
  TransportConfig config_;
  uint64_t now_ = 0;
  uint32_t poll_seq_ = 0;
  memory::MrTable mrs_;
  std::vector<rte_mbuf*> backlog_;
  wire::Ipv4Checksum ipv4_checksum_ = wire::Ipv4Checksum::compute;
  uint32_t zero_copy_min_ = 0;
  bool zero_copy_any_memory_ = false;
  rte_mempool* ext_pool_ = nullptr;  // data-less mbufs for payload segments
  wire::MacAddr mac_;
};

}  // namespace uroce::transport
