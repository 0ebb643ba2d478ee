// SPDX-License-Identifier: BSD-3-Clause
// One side of a benchmark: PD, CQ, a registered buffer and the QPs, set up
// and connected the verbs way. PeerInfo is what perftest exchanges over TCP.
#pragma once

#include <algorithm>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "options.h"
#include "uroce/verbs/verbs.h"

namespace uroce::perf {

struct PeerInfo {
  uint32_t qpn = 0;
  uint32_t psn = 0;
  uint32_t rkey = 0;
  uint64_t vaddr = 0;
  uint32_t out_reads = 0;
  wire::IpAddr gid;
};

// perftest's Q_Key of every UD QP (DEF_QKEY).
constexpr uint32_t kUdQkey = 0x11111111;
// A UD receive starts with a 40-byte slot for the GRH (perftest's
// UD_ADDITION); the payload follows it.
constexpr uint64_t kGrhBytes = 40;

// Bytes per QP for the largest size: two halves (latency tests, -b), each
// with room for a UD receive's GRH, in whole pages.
uint64_t buffer_bytes(const Options& o);

class Endpoint;
// -e, where a polling run would run the engines: sleeps until one of the
// endpoints' channels has an event (at most timeout_ms), unless a CQ has
// completions to poll already; then takes, acknowledges and re-arms.
// The engines run on threads of their own meanwhile.
void wait_events(std::initializer_list<Endpoint*> eps, int timeout_ms);
// Long enough to sleep, short enough for -D and the watchdog to stay
// accurate when no completion comes; --latency_gap's gap ends a wait too
// (to the millisecond above it).
inline int event_wait_ms(const Options& o) {
  return o.latency_gap_us ? int(std::min<uint64_t>(100, (uint64_t(o.latency_gap_us) + 999) / 1000)) : 100;
}

class Endpoint {
 public:
  // buf_bytes per QP; nullptr and a message on failure.
  static std::unique_ptr<Endpoint> create(Device& dev, const Options& o, uint64_t buf_bytes, uint32_t psn_seed,
                                          std::string& error);
  ~Endpoint();

  PeerInfo info(size_t qp) const;
  // INIT -> RTR -> RTS towards `remote`; 0 or an errno. UD: no peer in
  // the QP; the address handle of QP `qp` (ah()) leads to `remote`.
  int connect(size_t qp, const PeerInfo& remote, const Options& o, ibv_mtu mtu);
  bool ud() const { return ud_; }
  // UD or UC: nothing is resent, so what does not arrive was lost.
  bool unreliable() const { return ud_ || opts_.conn == Conn::uc; }
  AddressHandle* ah(size_t qp) { return ahs_[qp].get(); }
  // Where a received message's payload starts, after the receive's start:
  // past the GRH slot for UD.
  uint64_t grh_room() const { return ud_ ? kGrhBytes : 0; }

  Device& device() { return *dev_; }
  CompletionQueue& cq() { return *cq_; }  // send completions
  CompletionQueue& recv_cq() { return *rcq_; }  // receive completions (a side may send and receive: -b)
  QueuePair& qp(size_t i) { return *qps_[i]; }
  size_t qp_count() const { return qps_.size(); }
  uint8_t* buf(size_t qp) { return reinterpret_cast<uint8_t*>(addr(qp)); }
  uint64_t addr(size_t qp) const {
    return mrs_.size() > 1 ? reinterpret_cast<uintptr_t>(mrs_[qp]->addr())
                           : reinterpret_cast<uintptr_t>(mrs_[0]->addr()) + qp * buf_bytes_;
  }
  // --mr_per_qp: one MR per QP, else one for all.
  uint32_t lkey(size_t qp = 0) const { return mr(qp).lkey(); }
  uint32_t rkey(size_t qp = 0) const { return mr(qp).rkey(); }
  // To the QP's receive queue, or the shared one (--use-srq); 0 or an errno.
  int post_recv(size_t qp, const RecvWr* wr);
  uint64_t buf_bytes() const { return buf_bytes_; }
  // Where, in each QP's buffer, the peer's RDMA goes: the address sent in
  // PeerInfo is addr(qp) + this. Latency tests expose the second half, as
  // perftest does (its exchanged vaddr is buf + BUFF_SIZE, its write_lat
  // writes exactly there and spins on the last byte of its own second
  // half); the first half holds what this side sends. Bandwidth tests
  // expose the whole buffer.
  uint64_t exposed_offset() const { return exposed_offset_; }
  uint32_t recvs_outstanding = 0;  // receives posted and not yet consumed

  // -e: both CQs report to one completion channel, armed from creation.
  CompletionChannel* channel() { return channel_.get(); }
  // Nothing to poll on either CQ: takes, acknowledges and re-arms what the
  // channel holds. perftest's ctx_notify_events, on a non-blocking
  // descriptor so that several endpoints can be waited for at once.
  bool quiet() { return cq_->size() == 0 && rcq_->size() == 0; }
  void take_events();
  // Every poll of this side's CQs goes through here: -e sleeps only after
  // a turn of the loop that found nothing (wait_events).
  int poll(CompletionQueue& cq, int n, ibv_wc* wc) {
    const int k = cq.poll(n, wc);
    polled_ += uint64_t(k);
    return k;
  }
  // True once per change of the count of completions polled.
  bool polled_since_last_look() {
    const bool moved = polled_ != looked_;
    looked_ = polled_;
    return moved;
  }

 private:
  Endpoint() = default;
  const MemoryRegion& mr(size_t qp) const { return *mrs_[mrs_.size() > 1 ? qp : 0]; }
  int connect_ud(size_t qp, const PeerInfo& remote, const Options& o);
  int gid_index_ = 0;
  bool ud_ = false;
  Options opts_;
  Device* dev_ = nullptr;
  uint64_t buf_bytes_ = 0;
  uint64_t exposed_offset_ = 0;
  std::vector<uint32_t> psns_;
  std::unique_ptr<CompletionChannel> channel_;  // -e
  uint64_t polled_ = 0, looked_ = 0;
  std::unique_ptr<ProtectionDomain> pd_;
  std::unique_ptr<CompletionQueue> cq_, rcq_;
  std::unique_ptr<SharedReceiveQueue> srq_;
  std::vector<std::unique_ptr<MemoryRegion>> mrs_;
  std::vector<std::unique_ptr<QueuePair>> qps_;
  std::vector<std::unique_ptr<AddressHandle>> ahs_;  // UD: one per QP, to its peer QP
};

}  // namespace uroce::perf
