// SPDX-License-Identifier: BSD-3-Clause
// The poll-mode engine behind a Device: RX burst -> parse -> dispatch to
// the QP's responder or completer -> transport timers -> TX of whatever the
// QPs have ready, in bursts. Single-threaded: everything runs inside poll().
#pragma once

#include <rte_mbuf.h>

#include <array>
#include <cstdint>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "neighbor_table.h"
#include "transport/services.h"
#include "uroce/verbs/counters.h"
#include "uroce/verbs/device_config.h"
#include "uroce/wire/builder.h"
#include "uroce/wire/parser.h"

namespace uroce::transport {
struct Qp;
}

namespace uroce::engine {

inline constexpr uint16_t kBurst = 32;

// QPs waiting for a TX turn, first come first served. A TX round takes
// them from the front and may stop early (no TX room, no mbufs): the rest
// keep their place, so a round costs what is sent, not the number of QPs
// waiting, and every QP still gets its turn in order.
class QpFifo {
 public:
  bool empty() const { return head_ == q_.size(); }
  size_t size() const { return q_.size() - head_; }
  void push(transport::Qp* qp) { q_.push_back(qp); }
  transport::Qp* pop() {
    transport::Qp* qp = q_[head_++];
    // The taken front goes when it is at least half: amortised O(1) a pop,
    // and the vector never grows past twice the QPs queued.
    if (head_ == q_.size()) q_.clear(), head_ = 0;
    else if (head_ >= 64 && 2 * head_ >= q_.size()) q_.erase(q_.begin(), q_.begin() + long(head_)), head_ = 0;
    return qp;
  }
  void erase(transport::Qp* qp) {
    q_.erase(q_.begin(), q_.begin() + long(head_));
    head_ = 0;
    std::erase(q_, qp);
  }

 private:
  std::vector<transport::Qp*> q_;
  size_t head_ = 0;
};

// The transport's view of it (its time, TX queue, scheduling, keys) is the
// transport::EngineServices base; the rest is the engine's own.
class Engine : public transport::EngineServices {
 public:
  explicit Engine(const DeviceConfig& config);
  ~Engine();
  bool init(std::string& error);

  int poll();
  uint64_t next_deadline() const;
  const DeviceConfig& device_config() const { return device_config_; }
  std::mt19937_64& rng() { return rng_; }

  // QPs.
  // A free QPN, 0 when all kQpnSlots are taken.
  uint32_t alloc_qpn();
  void add_qp(transport::Qp* qp);
  void remove_qp(transport::Qp* qp);
  // Before a QP is destroyed: its deferred ACKs leave now (else the peer,
  // whose request the application here has seen complete, retries until
  // it gives up).
  void send_deferred_acks(transport::Qp* qp);
  transport::Qp* find_qp(uint32_t qpn) const;
  // No live QP holds `qpn`'s slot: it may be given to a QP (the CM's QP1).
  bool qpn_free(uint32_t qpn) const;
  // The transport::EngineServices calls (documented there), which forward
  // to these.
  void schedule(transport::Qp* qp);
  void schedule_next(transport::Qp* qp);
  void send_now(transport::Qp* qp);
  void watch_timer(transport::Qp* qp);
  void pace(transport::Qp* qp, uint64_t at);
  rte_mbuf* alloc_mbuf();
  void transmit(rte_mbuf* m, bool to_self);
  void post_async_event(const AsyncEvent& ev);
  bool resolve(const wire::IpAddr& ip, wire::MacAddr& mac) const { return neighbors_.lookup(ip, mac); }

  // Neighbours: static entries, ARP/ND resolution, answers for our GIDs.
  void add_neighbor(const wire::IpAddr& ip, const wire::MacAddr& mac) { neighbors_.set(ip, mac); }
  NeighborState resolve_neighbor(const wire::IpAddr& ip);

  // Asynchronous events, in the order they happened (control path). The
  // eventfd (semaphore mode, like a completion channel's) counts them:
  // readable while one waits. take_async_event takes an event and its
  // count; take_async_event_counted an event whose count was read.
  int async_fd() const { return async_fd_; }
  bool has_async_event() const { return !async_events_.empty(); }
  bool take_async_event(AsyncEvent& ev);
  bool take_async_event_counted(AsyncEvent& ev);
  // Forgets unread events about an object that goes away.
  void drop_async_events(const void* object);

  DeviceCounters& counters() { return counters_; }
  TransportCounters& retired() { return retired_; }
  const std::vector<transport::Qp*>& qps() const { return all_; }

 private:
  std::vector<AsyncEvent> async_events_;
  int async_fd_ = -1;
  DeviceConfig device_config_;
  void receive(rte_mbuf* m);
  void neighbor_rx(const rte_mbuf* m);
  void send_neighbor_request(const wire::IpAddr& ip);
  void send_frame(const uint8_t* frame, size_t len);
  bool is_own_gid(const wire::IpAddr& ip) const;
  bool for_this_host(const rte_mbuf* m) const;
  bool on_own_vlan(const rte_mbuf* m) const;
  bool to_own_gid(const wire::PacketView& pkt) const;
  int run_neighbors();
  int run_loopback();
  void refresh_clock();
  bool idle_skip();
  int run_timers();
  void untime(uint32_t slot);
  int run_paced();
  int run_tx();
  void join_later();
  void flush_tx();

  rte_mempool* pool_ = nullptr;
  std::mt19937_64 rng_;
  // Deadlines set from an old now_ (in send_now, or a poll that kept the
  // time of an earlier one): moved on at the next reading of the clock.
  std::vector<transport::Qp*> rebase_;
  bool stale_ = false;
  // Idle polls (see poll): whether they may skip work, how many did since
  // the last full one, how many polls in a row received frames, and how
  // many QPs run congestion control (which wants the time on every poll).
  static constexpr uint32_t kIdleCheck = 8;
  bool lean_ = false;
  uint32_t idle_polls_ = 0;
  uint32_t busy_run_ = 0;
  uint32_t cc_qps_ = 0;
  uint32_t next_qpn_ = 0x11;  // like rxe: user QPs start at 0x11
  // QPs by the low 16 bits of their QPN (alloc_qpn keeps those distinct):
  // one load per received packet, instead of a hash lookup.
  static constexpr uint32_t kQpnSlots = 1u << 16;
  std::vector<transport::Qp*> by_qpn_ = std::vector<transport::Qp*>(kQpnSlots);
  std::vector<transport::Qp*> all_;
  QpFifo ready_;
  std::vector<transport::Qp*> later_;  // join ready_ after this round (schedule_next)
  std::vector<transport::Qp*> timed_;
  // Paced QPs by send time: a min-heap, so a poll looks only at the QPs
  // that are due, however many wait.
  using PacedEntry = std::pair<uint64_t, transport::Qp*>;
  std::vector<PacedEntry> paced_;
  // Frames addressed to this device itself (QP to QP on one device, as
  // rxe's loopback): handled as received on the next poll, never sent.
  std::vector<rte_mbuf*> looped_;
  std::vector<rte_mbuf*> looping_;
  bool starved_ = false;  // the last TX round ran out of mbufs or TX room
  // A segmented payload, made contiguous: as long as an IP datagram can
  // be, so that one over the path MTU still reaches the QP's check.
  std::vector<uint8_t> rx_gather_ = std::vector<uint8_t>(65536);
  // Group MACs we take frames for: broadcast (ARP) and the solicited-node
  // group of each IPv6 GID (neighbour solicitations), as a host joins them.
  std::vector<wire::MacAddr> groups_;
  wire::ParseOptions rx_parse_;
  // The VLAN id the device's frames carry: 0 for untagged frames, which
  // priority-tagged ones (VLAN id 0) are too.
  uint16_t vlan_vid_ = 0;
  NeighborTable neighbors_;
  std::vector<wire::IpAddr> neighbors_due_;
  DeviceCounters counters_;
  TransportCounters retired_;
};

}  // namespace uroce::engine
