// SPDX-License-Identifier: BSD-3-Clause
#include "engine.h"

#include <poll.h>
#include <rte_errno.h>
#include <sys/eventfd.h>
#include <unistd.h>
#include <rte_mempool.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <functional>

#include "../transport/cc.h"
#include "../transport/qp.h"
#include "../transport/transport.h"
#include "uroce/wire/byte_order.h"
#include "uroce/wire/eth.h"
#include "uroce/wire/ipv4.h"
#include "wire/neighbor.h"

namespace uroce::engine {
namespace {

constexpr uint8_t kZeroV4[4] = {0, 0, 0, 0};

// Data room for the largest frame: VLAN + IPv6 + UDP + headers + 4096 + ICRC.
constexpr uint16_t kDataRoom = RTE_PKTMBUF_HEADROOM + 4352;

uint64_t pick_seed(uint64_t seed) {
  if (seed) return seed;
  std::random_device rd;
  return (uint64_t(rd()) << 32) | rd();
}

}  // namespace

Engine::Engine(const DeviceConfig& config)
    : EngineServices(pick_seed(config.seed), config.limits.max_mr, config.limits.max_mw),
      device_config_(config),
      rng_(pick_seed(config.seed) + 1),
      neighbors_(uint64_t(config.neighbor_retry_ms) * 1000000, uint64_t(config.neighbor_timeout_ms) * 1000000) {
  config_.limits = config.limits;
  config_.gids = config.gids;
  config_.port_mtu = config.port->mtu();
  config_.max_unacked_psns = config.max_unacked_psns;
  config_.ack_req_every = config.ack_req_every;
  config_.vlan = config.vlan_id >= 0;
  config_.vlan_tci = config_.vlan ? uint16_t((config.vlan_pcp & 7) << 13 | (config.vlan_id & 0xFFF)) : 0;
  vlan_vid_ = config_.vlan ? uint16_t(config.vlan_id) : 0;
  backlog_.reserve(kTxBacklog);
  later_.reserve(64);
  rebase_.reserve(64);
  paced_.reserve(64);
  looped_.reserve(kTxBacklog);
  looping_.reserve(kTxBacklog);
  mac_ = config.port->mac();
  lean_ = !config.clock->free_to_read();
  // A QP may connect to another QP of this device (as on rxe): our own
  // GIDs are at our own MAC, and their frames loop back in transmit() (the
  // sender knows: Qp::to_self, set with its address vector).
  for (const wire::IpAddr& gid : device_config_.gids) neighbors_.set(gid, mac_);
  groups_.push_back(wire::MacAddr{{0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF}});
  for (const wire::IpAddr& gid : device_config_.gids)
    if (!gid.is_v4_mapped()) groups_.push_back(wire::MacAddr{{0x33, 0x33, 0xFF, gid.bytes[13], gid.bytes[14], gid.bytes[15]}});
  rx_parse_.verify_udp_checksum = true;
  rx_parse_.allow_long_payload = true;
}

Engine::~Engine() {
  if (async_fd_ >= 0) close(async_fd_);
  for (rte_mbuf* m : backlog_) rte_pktmbuf_free(m);
  for (rte_mbuf* m : looped_) rte_pktmbuf_free(m);
  // Frames of this pool may still sit in a port's queues (a NIC's TX ring,
  // the peer end of a ring pair) and be freed into it later: then the pool
  // must outlive the device, so it is left to the process's exit.
  if (pool_ && rte_mempool_in_use_count(pool_) == 0) rte_mempool_free(pool_);
  if (ext_pool_ && rte_mempool_in_use_count(ext_pool_) == 0) rte_mempool_free(ext_pool_);
}

bool Engine::init(std::string& error) {
  async_fd_ = eventfd(0, EFD_SEMAPHORE | EFD_CLOEXEC);
  if (async_fd_ < 0) {
    error = "device " + device_config_.name + ": cannot create the async event descriptor: " + std::strerror(errno);
    return false;
  }
  static std::atomic<unsigned> instance{0};
  const std::string name = "uroce_tx" + std::to_string(instance++);
  pool_ = rte_pktmbuf_pool_create(name.c_str(), device_config_.mbufs, 256, 0, kDataRoom, SOCKET_ID_ANY);
  if (pool_ == nullptr) {
    error = "device " + device_config_.name + ": cannot create a pool of " + std::to_string(device_config_.mbufs) +
            " mbufs: " + rte_strerror(rte_errno) + " (is the DPDK EAL initialised, with enough memory?)";
    return false;
  }
  zero_copy_any_memory_ = device_config_.port->tx_chains() == TxChains::any_memory;
  if (device_config_.port->tx_ipv4_checksum()) ipv4_checksum_ = wire::Ipv4Checksum::offloaded;
  if (device_config_.zero_copy_min && device_config_.port->tx_chains() != TxChains::none) {
    ext_pool_ = rte_pktmbuf_pool_create((name + "x").c_str(), device_config_.mbufs, 256, 0, 0, SOCKET_ID_ANY);
    if (ext_pool_ != nullptr) zero_copy_min_ = device_config_.zero_copy_min;  // else copy: slower, still right
  }
  return true;
}

namespace {

// Takes one count off an eventfd if it has one (never blocks).
bool take_count(int fd) {
  pollfd p{fd, POLLIN, 0};
  uint64_t v;
  return poll(&p, 1, 0) == 1 && read(fd, &v, sizeof v) == ssize_t(sizeof v);
}

}  // namespace

void Engine::post_async_event(const AsyncEvent& ev) {
  async_events_.push_back(ev);
  const uint64_t one = 1;
  [[maybe_unused]] const ssize_t w = write(async_fd_, &one, sizeof one);
}

bool Engine::take_async_event_counted(AsyncEvent& ev) {
  if (async_events_.empty()) return false;
  ev = async_events_.front();
  async_events_.erase(async_events_.begin());
  return true;
}

bool Engine::take_async_event(AsyncEvent& ev) {
  if (!take_async_event_counted(ev)) return false;
  take_count(async_fd_);
  return true;
}

void Engine::drop_async_events(const void* object) {
  const size_t before = async_events_.size();
  std::erase_if(async_events_, [object](const AsyncEvent& e) {
    return static_cast<const void*>(e.srq) == object || static_cast<const void*>(e.qp) == object ||
           static_cast<const void*>(e.cq) == object;
  });
  for (size_t n = before - async_events_.size(); n > 0; --n) take_count(async_fd_);
}

uint32_t Engine::alloc_qpn() {
  // kQpnSlots consecutive usable QPNs cover every slot once; 0..0x10 and
  // 0xFFFFFF (multicast) are skipped without using up a try.
  for (uint32_t tries = 0; tries < kQpnSlots;) {
    const uint32_t qpn = next_qpn_;
    next_qpn_ = (next_qpn_ + 1) & 0xFFFFFF;
    if (qpn < 0x11 || qpn == 0xFFFFFF) continue;
    ++tries;
    if (by_qpn_[qpn % kQpnSlots] == nullptr) return qpn;
  }
  return 0;  // every slot taken
}

void Engine::add_qp(transport::Qp* qp) {
  if (qp->cc.algo != cc::CcAlgo::none) ++cc_qps_;
  by_qpn_[qp->qpn % kQpnSlots] = qp;
  qp->engine_slot = uint32_t(all_.size());
  all_.push_back(qp);
}

void Engine::send_deferred_acks(transport::Qp* qp) {
  if (qp->state == IBV_QPS_RESET || qp->state == IBV_QPS_INIT || qp->state == IBV_QPS_ERR) return;
  transport::responder_send_deferred_acks(*qp);
  flush_tx();
}

void Engine::remove_qp(transport::Qp* qp) {
  if (qp->cc.algo != cc::CcAlgo::none) --cc_qps_;
  retired_ += qp->counters;
  by_qpn_[qp->qpn % kQpnSlots] = nullptr;
  // Thousands of QPs go one by one: what costs the number of QPs is done
  // only for a list the QP is on.
  all_[qp->engine_slot] = all_.back();
  all_[qp->engine_slot]->engine_slot = qp->engine_slot;
  all_.pop_back();
  if (qp->scheduled) ready_.erase(qp);
  if (qp->later) std::erase(later_, qp);
  if (qp->timed) untime(qp->timer_slot);
  if (qp->rebase) std::erase(rebase_, qp);
  if (qp->cc.paced) {
    std::erase_if(paced_, [qp](const PacedEntry& e) { return e.second == qp; });
    std::make_heap(paced_.begin(), paced_.end(), std::greater<>());
  }
}

bool Engine::qpn_free(uint32_t qpn) const { return by_qpn_[qpn % kQpnSlots] == nullptr; }

transport::Qp* Engine::find_qp(uint32_t qpn) const {
  transport::Qp* qp = by_qpn_[qpn % kQpnSlots];
  return qp != nullptr && qp->qpn == qpn ? qp : nullptr;
}

void Engine::schedule(transport::Qp* qp) {
  if (qp->scheduled) return;
  qp->scheduled = true;
  ready_.push(qp);
}

void Engine::schedule_next(transport::Qp* qp) {
  if (qp->scheduled || qp->later) return;
  qp->later = true;
  later_.push_back(qp);
}

void Engine::join_later() {
  for (transport::Qp* qp : later_) {
    qp->later = false;
    schedule(qp);
  }
  later_.clear();
}

void Engine::send_now(transport::Qp* qp) {
  join_later();  // an ACK held back for this round leaves with the answer
  schedule(qp);
  // This is the answer's critical path, and reading the TSC costs about a
  // third of building a frame here: the time stays the last reading's, and
  // a retransmission deadline set from it moves on at the next one (see
  // refresh_clock), so it is never early. Only a paced QP (congestion
  // control) needs the time now. A new round, too, so an ACK the last
  // receive queued leaves with these frames (see queue_ack).
  if (qp->cc.algo != cc::CcAlgo::none) refresh_clock();  // which also moves on kept-time deadlines
  const bool was_stale = stale_;
  stale_ = true;
  ++poll_seq_;
  run_tx();
  flush_tx();
  stale_ = was_stale;
}

void Engine::refresh_clock() {
  const uint64_t before = now_;
  now_ = device_config_.clock->now_ns();
  // Set from `before` (or later) outside a poll: later by what has passed.
  const uint64_t passed = now_ > before ? now_ - before : 0;
  for (transport::Qp* qp : rebase_) {
    qp->rebase = false;
    if (qp->comp.deadline != kNever) qp->comp.deadline += passed;
    if (qp->req.rnr_until != 0) qp->req.rnr_until += passed;
  }
  rebase_.clear();
}

void Engine::watch_timer(transport::Qp* qp) {
  if (stale_ && !qp->rebase) {
    qp->rebase = true;
    rebase_.push_back(qp);  // at most one entry per QP
  }
  if (qp->timed) return;
  qp->timed = true;
  qp->timer_slot = uint32_t(timed_.size());
  timed_.push_back(qp);
}

void Engine::pace(transport::Qp* qp, uint64_t at) {
  if (qp->cc.paced) return;
  qp->cc.paced = true;
  paced_.emplace_back(at, qp);  // grows only with the number of QPs
  std::push_heap(paced_.begin(), paced_.end(), std::greater<>());
}

int Engine::run_paced() {
  int due = 0;
  while (!paced_.empty() && paced_.front().first <= now_) {
    std::pop_heap(paced_.begin(), paced_.end(), std::greater<>());
    transport::Qp* qp = paced_.back().second;
    paced_.pop_back();
    qp->cc.paced = false;
    schedule(qp);
    ++due;
  }
  return due;
}

NeighborState Engine::resolve_neighbor(const wire::IpAddr& ip) {
  if (neighbors_.start(ip, device_config_.clock->now_ns())) send_neighbor_request(ip);
  return neighbors_.state(ip);
}

bool Engine::is_own_gid(const wire::IpAddr& ip) const {
  return std::find(device_config_.gids.begin(), device_config_.gids.end(), ip) != device_config_.gids.end();
}

// ARP and ND frames, built untagged: the device's tag goes in here.
void Engine::send_frame(const uint8_t* frame, size_t len) {
  rte_mbuf* m = alloc_mbuf();
  if (m == nullptr) return;  // resolution retries; a requester asks again
  constexpr size_t kMacs = 12;
  const size_t tag = config_.vlan ? wire::kVlanTagLen : 0;
  auto* p = reinterpret_cast<uint8_t*>(rte_pktmbuf_append(m, uint16_t(len + tag)));
  std::memcpy(p, frame, kMacs);
  if (tag) {
    wire::store_be16(p + kMacs, wire::kEtherTypeVlan);
    wire::store_be16(p + kMacs + 2, config_.vlan_tci);
  }
  std::memcpy(p + kMacs + tag, frame + kMacs, len - kMacs);
  ++counters_.tx_neighbor;
  wire::MacAddr dst;
  std::memcpy(dst.bytes.data(), frame, 6);
  transmit(m, dst == mac_);
}

void Engine::send_neighbor_request(const wire::IpAddr& ip) {
  uint8_t frame[wire::kNeighborFrameMax];
  // Ask from the GID of the same family; without one there is no asking.
  for (const wire::IpAddr& own : device_config_.gids) {
    if (own.is_v4_mapped() != ip.is_v4_mapped()) continue;
    send_frame(frame, ip.is_v4_mapped() ? wire::build_arp_request(frame, mac_, own, ip)
                                        : wire::build_nd_solicit(frame, mac_, own, ip));
    return;
  }
}

void Engine::neighbor_rx(const rte_mbuf* m) {
  wire::NeighborMsg msg;
  if (m->nb_segs != 1 || !wire::parse_neighbor(rte_pktmbuf_mtod(m, const uint8_t*), m->data_len, msg)) {
    ++counters_.rx_not_roce;
    return;
  }
  ++counters_.rx_neighbor;
  const bool asks_us = (msg.kind == wire::NeighborMsg::Kind::arp_request ||
                        msg.kind == wire::NeighborMsg::Kind::nd_solicit) &&
                       is_own_gid(msg.target) && msg.reply_ip != wire::IpAddr{};  // not a DAD probe
  // Learn from replies we asked for and from requests aimed at us (the
  // asker will talk to us next), as Linux does; never from anything else,
  // never over a static entry, never a group or zero MAC, an unspecified
  // address (ARP probes) or one of our own addresses.
  const bool unicast = (msg.sender_mac.bytes[0] & 1) == 0 && msg.sender_mac != wire::MacAddr{};
  const bool plausible = unicast && !is_own_gid(msg.sender_ip) && msg.sender_ip != wire::IpAddr{} &&
                         !(msg.sender_ip.is_v4_mapped() && msg.sender_ip == wire::IpAddr::from_v4(kZeroV4));
  if (msg.has_sender_mac && plausible && (asks_us || neighbors_.learning(msg.sender_ip)))
    neighbors_.learn(msg.sender_ip, msg.sender_mac);
  if (!asks_us) return;
  uint8_t frame[wire::kNeighborFrameMax];
  send_frame(frame, msg.kind == wire::NeighborMsg::Kind::arp_request
                        ? wire::build_arp_reply(frame, mac_, msg.target, msg)
                        : wire::build_nd_advert(frame, mac_, msg.target, msg));
}

int Engine::run_neighbors() {
  neighbors_due_.clear();
  neighbors_.expire(now_, neighbors_due_);
  for (const wire::IpAddr& ip : neighbors_due_) send_neighbor_request(ip);
  return int(neighbors_due_.size());
}

rte_mbuf* Engine::alloc_mbuf() {
  rte_mbuf* m = rte_pktmbuf_alloc(pool_);
  if (m == nullptr) ++counters_.tx_no_mbuf;
  return m;
}

void Engine::transmit(rte_mbuf* m, bool to_self) {
  if (to_self) {
    // Never reaches the port, so nobody else would fill in the checksum
    // the receive side checks.
    if (m->ol_flags & RTE_MBUF_F_TX_IP_CKSUM) {
      uint8_t* ip = rte_pktmbuf_mtod_offset(m, uint8_t*, m->l2_len);
      wire::Ipv4Ref(ip).set_checksum(wire::ipv4_header_checksum(ip, m->l3_len));
      m->ol_flags &= ~(RTE_MBUF_F_TX_IP_CKSUM | RTE_MBUF_F_TX_IPV4);
    }
    if (looped_.size() < kTxBacklog) {
      looped_.push_back(m);
    } else {
      rte_pktmbuf_free(m);  // as a full queue would: retransmission recovers
      ++counters_.transport.send_err;
    }
    return;
  }
  if (backlog_.size() >= kTxBacklog) flush_tx();
  if (backlog_.size() >= kTxBacklog) {
    rte_pktmbuf_free(m);  // the port is stuck: drop, retransmission recovers
    ++counters_.transport.send_err;
    return;
  }
  backlog_.push_back(m);
  ++counters_.tx_frames;
  if (backlog_.size() >= kBurst) flush_tx();
}

void Engine::flush_tx() {
  size_t sent = 0;
  while (sent < backlog_.size()) {
    const uint16_t n = uint16_t(std::min<size_t>(backlog_.size() - sent, kBurst));
    const uint16_t k = device_config_.port->tx_burst(backlog_.data() + sent, n);
    sent += k;
    if (k < n) break;
  }
  backlog_.erase(backlog_.begin(), backlog_.begin() + long(sent));
}

// A promiscuous or af_packet port also delivers frames for other hosts:
// only our unicast MAC and the groups we joined are ours. The groups
// (broadcast, IPv6 solicited-node) are joined for ARP and neighbour
// discovery only: receive() drops a RoCE frame sent to one of them.
bool Engine::for_this_host(const rte_mbuf* m) const {
  if (m->data_len < 6) return true;  // the parser refuses it
  const uint8_t* dst = rte_pktmbuf_mtod(m, const uint8_t*);
  if (std::memcmp(dst, mac_.bytes.data(), 6) == 0) return true;
  if ((dst[0] & 1) == 0) return false;
  for (const wire::MacAddr& g : groups_)
    if (std::memcmp(dst, g.bytes.data(), 6) == 0) return true;
  return false;
}

// 802.1Q: a frame of another VLAN is for another network, as for a
// Linux host without that VLAN's interface. The tag is in the frame, or
// was taken out by the port (af_packet on a kernel interface, a NIC's
// VLAN stripping), which says so in the mbuf.
bool Engine::on_own_vlan(const rte_mbuf* m) const {
  uint16_t vid = 0;
  const uint8_t* p = rte_pktmbuf_mtod(m, const uint8_t*);
  if (m->ol_flags & RTE_MBUF_F_RX_VLAN_STRIPPED)
    vid = m->vlan_tci & 0xFFF;
  else if (m->data_len >= wire::kEthHeaderLen + wire::kVlanTagLen && wire::load_be16(p + 12) == wire::kEtherTypeVlan)
    vid = wire::load_be16(p + 14) & 0xFFF;
  return vid == vlan_vid_;
}

// Right MAC but another IP (rxe's GID check): not for this device.
bool Engine::to_own_gid(const wire::PacketView& pkt) const {
  for (const wire::IpAddr& gid : device_config_.gids) {
    if (pkt.ipv6 ? std::memcmp(pkt.ipv6_hdr().dst(), gid.bytes.data(), 16) == 0
                 : gid.is_v4_mapped() && std::memcmp(pkt.ipv4().dst(), gid.v4_bytes(), 4) == 0)
      return true;
  }
  return false;
}

void Engine::receive(rte_mbuf* m) {
  ++counters_.rx_frames;
  if (!for_this_host(m) || !on_own_vlan(m)) {
    ++counters_.rx_other_host;
    return;
  }
  wire::HeaderScratch scratch;
  wire::PacketView pkt;
  const wire::ParseError e = wire::parse_mbuf(m, pkt, scratch, rx_parse_);
  if (e != wire::ParseError::ok) {
    if (e == wire::ParseError::not_roce) neighbor_rx(m);
    else if (e == wire::ParseError::icrc) ++counters_.rx_icrc_err;
    else if (e == wire::ParseError::udp_checksum) ++counters_.rx_udp_csum_err;
    else ++counters_.rx_invalid;
    return;
  }
  // RoCE is unicast here (no multicast QPs): a request or response in a
  // link-layer broadcast or multicast frame is not for this device, as
  // RFC 1122 3.3.6 has a host discard a unicast datagram that came in one.
  if (rte_pktmbuf_mtod(m, const uint8_t*)[0] & 1) {
    ++counters_.rx_other_host;
    return;
  }
  if (!to_own_gid(pkt)) {
    ++counters_.rx_other_ip;
    return;
  }
  transport::Qp* qp = find_qp(pkt.bth().dest_qp());
  if (qp == nullptr) {
    ++counters_.rx_unknown_qp;
    return;
  }
  // A connected QP hears only its peer: a stranger who guessed the QPN and
  // a PSN in the window must not get a request executed or an ACK taken.
  if (qp->is_connected() && !transport::from_peer(*qp, pkt)) {
    ++counters_.rx_not_from_peer;
    return;
  }
  // The device's one partition is the default, 0xFFFF (a full member), so
  // a packet belongs to it with either membership bit: 0x7FFF or 0xFFFF.
  if ((pkt.bth().pkey() & 0x7FFF) != 0x7FFF) {
    ++counters_.rx_bad_pkey;
    return;
  }
  if (pkt.op->transport == wire::Transport::cnp) {
    transport::cc_cnp_rx(*qp);
    return;
  }
  transport::cc_rx(*qp, pkt);
  // A payload spread over segments (memif chains frames above its buffer
  // size) is gathered once into scratch; the handlers copy out of it.
  if (pkt.payload == nullptr && pkt.payload_len) {
    if (pkt.payload_len > rx_gather_.size()) {
      ++counters_.rx_invalid;
      return;
    }
    pkt.payload = static_cast<const uint8_t*>(rte_pktmbuf_read(m, pkt.payload_off, pkt.payload_len, rx_gather_.data()));
    ++counters_.rx_gathered;
  }
  if (!qp->is_rc()) {
    if (qp->is_ud()) transport::ud_rx(*qp, pkt);
    else transport::uc_rx(*qp, pkt);  // UC has only requests
  } else if (pkt.op->has(wire::opf::request)) transport::responder_rx(*qp, pkt);
  else transport::completer_rx(*qp, pkt);
}

int Engine::run_loopback() {
  looping_.clear();
  looping_.swap(looped_);
  for (rte_mbuf* m : looping_) {
    receive(m);
    rte_pktmbuf_free(m);
  }
  return int(looping_.size());
}

// Takes the timer list's entry `slot` out; the last entry takes its place.
void Engine::untime(uint32_t slot) {
  timed_[slot] = timed_.back();
  timed_[slot]->timer_slot = slot;
  timed_.pop_back();
}

int Engine::run_timers() {
  int work = 0;
  for (size_t i = 0; i < timed_.size();) {
    transport::Qp* qp = timed_[i];
    const bool rnr = qp->req.rnr_until != 0;
    if (qp->comp.deadline == kNever && !rnr) {
      qp->timed = false;
      untime(uint32_t(i));
      continue;
    }
    if (now_ >= qp->comp.deadline || (rnr && now_ >= qp->req.rnr_until)) {
      transport::completer_timer(*qp);
      ++work;
    }
    ++i;
  }
  return work;
}

int Engine::run_tx() {
  int work = 0;
  // QPs scheduled while we run go to the next round; each QP gets a turn
  // until the TX queue or the mbufs run out. Then the round ends, and the
  // QPs not reached keep their place: with thousands of QPs waiting on a
  // full queue, trying each of them on every poll would cost per poll what
  // the number of QPs is, and send nothing more.
  starved_ = false;
  if (!backlog_.empty()) flush_tx();
  if (!tx_has_room()) return starved_ = true, 0;  // nothing could go out: no QP is visited
  for (size_t turns = ready_.size(); turns > 0 && !starved_; --turns) {
    transport::Qp* qp = ready_.pop();
    qp->scheduled = false;
    const uint64_t before = qp->counters.sent_pkts;
    const uint64_t no_mbuf = counters_.tx_no_mbuf;
    transport::responder_tx(*qp);
    transport::requester_tx(*qp);
    work += int(qp->counters.sent_pkts - before);
    // Stopped for want of TX room or mbufs: try again next poll.
    const bool starved = counters_.tx_no_mbuf != no_mbuf || !tx_has_room();
    // A paced QP comes back from the pacing heap for its READ responses, but
    // an ACK (deferred one poll) is not paced.
    const bool resp_due = !qp->resp.out.empty() && (!qp->cc.paced || qp->resp.out.front().kind == transport::RespOut::ack);
    const bool backlog = resp_due || (qp->req.wqe != qp->sq.head() && starved);
    if (backlog) schedule(qp);
    starved_ |= starved;
  }
  return work;
}

// While an application waits for a frame, an idle poll runs millions of
// times a second, and a frame that arrives waits on average half a poll to
// be seen: so an idle poll with nothing queued is only the port check,
// and the clock, timers and neighbours are looked at every kIdleCheck-th.
bool Engine::idle_skip() {
  if (!lean_ || !looped_.empty() || !ready_.empty() || !backlog_.empty() || !paced_.empty()) return false;
  if (++idle_polls_ < kIdleCheck) return true;
  idle_polls_ = 0;
  return false;
}

int Engine::poll() {
  rte_mbuf* rx[kBurst];
  const uint16_t n = device_config_.port->rx_burst(rx, kBurst);
  if (n == 0) {
    busy_run_ = 0;
    if (idle_skip()) return 0;
  }
  // The first poll with frames after idle ones keeps the time of the last
  // full poll (a few polls old): its frames are often a request to
  // answer at once, and a TSC read costs ~23 ns here. Deadlines set from
  // that time are moved on at the next reading (refresh_clock); a run of
  // busy polls, and congestion control's pacing, read it every time.
  const bool keep_time = lean_ && n > 0 && busy_run_ == 0 && cc_qps_ == 0;
  if (n > 0) ++busy_run_;
  if (keep_time) stale_ = true;
  else refresh_clock();
  ++poll_seq_;
  for (uint16_t i = 0; i < n; ++i) receive(rx[i]);
  // One pass back to the pools for the whole burst (mostly one pool, one
  // cache operation) instead of one free per frame.
  rte_pktmbuf_free_bulk(rx, n);
  int work = n + run_loopback() + run_timers() + run_neighbors() + run_paced();
  work += run_tx();
  join_later();
  flush_tx();
  stale_ = false;
  return work + int(backlog_.size() ? 1 : 0);
}

uint64_t Engine::next_deadline() const {
  uint64_t t = kNever;
  for (const transport::Qp* qp : timed_) {
    t = std::min(t, qp->comp.deadline);
    if (qp->req.rnr_until) t = std::min(t, qp->req.rnr_until);
  }
  t = std::min(t, neighbors_.next_deadline());
  if (!paced_.empty()) t = std::min(t, paced_.front().first);
  // QPs waiting only for mbufs can do nothing until frames are freed, which
  // happens on a delivery, not now: do not ask to be polled at once.
  if ((!ready_.empty() && !starved_) || !backlog_.empty() || !looped_.empty()) t = std::min(t, now_);
  return t;
}

}  // namespace uroce::engine

// The transport's calls into the engine (transport/services.h).
namespace uroce::transport {
namespace {
engine::Engine& self(EngineServices* s) { return *static_cast<engine::Engine*>(s); }
}  // namespace

rte_mbuf* EngineServices::alloc_mbuf() { return self(this).alloc_mbuf(); }
void EngineServices::transmit(rte_mbuf* m, bool to_self) { self(this).transmit(m, to_self); }
void EngineServices::schedule(Qp* qp) { self(this).schedule(qp); }
void EngineServices::schedule_next(Qp* qp) { self(this).schedule_next(qp); }
void EngineServices::send_now(Qp* qp) { self(this).send_now(qp); }
void EngineServices::pace(Qp* qp, uint64_t at) { self(this).pace(qp, at); }
void EngineServices::watch_timer(Qp* qp) { self(this).watch_timer(qp); }
bool EngineServices::resolve(const wire::IpAddr& ip, wire::MacAddr& mac) const {
  return static_cast<const engine::Engine*>(this)->resolve(ip, mac);
}
NeighborState EngineServices::resolve_neighbor(const wire::IpAddr& ip) { return self(this).resolve_neighbor(ip); }
void EngineServices::post_async_event(const AsyncEvent& ev) { self(this).post_async_event(ev); }

}  // namespace uroce::transport
