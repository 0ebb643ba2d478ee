// SPDX-License-Identifier: BSD-3-Clause
// The data path of one client: WQEs from its arena's rings to its QPs,
// completions from its CQs to the arena. Each slot is copied out of shared
// memory before it is looked at, so the client cannot change it between
// the check and the use.
#include <unistd.h>

#include <cstddef>
#include <cstring>

#include "session.h"

namespace uroced {

using namespace uroce::daemon;

namespace {

constexpr unsigned kBatch = 16;
constexpr unsigned kSendFlags = IBV_SEND_FENCE | IBV_SEND_SIGNALED | IBV_SEND_SOLICITED | IBV_SEND_INLINE;

// The opcodes a QP of the type may post (UC: no READ, no atomics, no SEND
// with invalidate; UD: SENDs only; window binds and local invalidations
// are local, on RC and UC).
bool opcode_ok(ibv_qp_type type, uint32_t op) {
  switch (op) {
    case IBV_WR_SEND:
    case IBV_WR_SEND_WITH_IMM: return true;
    case IBV_WR_RDMA_WRITE:
    case IBV_WR_RDMA_WRITE_WITH_IMM:
    case IBV_WR_BIND_MW:
    case IBV_WR_LOCAL_INV: return type != IBV_QPT_UD;
    case IBV_WR_RDMA_READ:
    case IBV_WR_SEND_WITH_INV:
    case IBV_WR_ATOMIC_CMP_AND_SWP:
    case IBV_WR_ATOMIC_FETCH_AND_ADD: return type == IBV_QPT_RC;
    default: return false;
  }
}

bool is_local_op(uint32_t op) { return op == IBV_WR_BIND_MW || op == IBV_WR_LOCAL_INV; }

ibv_wc_opcode wc_opcode(uint32_t op) {
  switch (op) {
    case IBV_WR_RDMA_WRITE:
    case IBV_WR_RDMA_WRITE_WITH_IMM: return IBV_WC_RDMA_WRITE;
    case IBV_WR_RDMA_READ: return IBV_WC_RDMA_READ;
    case IBV_WR_ATOMIC_CMP_AND_SWP: return IBV_WC_COMP_SWAP;
    case IBV_WR_ATOMIC_FETCH_AND_ADD: return IBV_WC_FETCH_ADD;
    case IBV_WR_BIND_MW: return IBV_WC_BIND_MW;
    case IBV_WR_LOCAL_INV: return IBV_WC_LOCAL_INV;
    default: return IBV_WC_SEND;
  }
}

// What a slot becomes once checked: the verbs WR and its own SGE copies.
struct SendBatch {
  uroce::SendWr wr[kBatch];
  ibv_sge sge[kBatch][kMaxSge];
  uint8_t inline_data[kBatch][kMaxInline];
};
struct RecvBatch {
  uroce::RecvWr wr[kBatch];
  ibv_sge sge[kBatch][kMaxSge];
};

// Copies up to n receive slots from `consumer` on out of the ring into b,
// each checked by ok() on the copy; stops at the first that fails, which
// is left in `s` with `refused` set. Returns the WRs built (chained).
template <class Ok>
unsigned build_recvs(const RecvSlot* slots, uint32_t consumer, uint32_t entries, unsigned n, RecvBatch& b,
                     RecvSlot& s, bool& refused, Ok ok) {
  unsigned built = 0;
  refused = false;
  for (unsigned i = 0; i < n; ++i) {
    std::memcpy(&s, &slots[(consumer + i) & (entries - 1)], sizeof s);
    if (!ok(s)) {
      refused = true;
      break;
    }
    uroce::RecvWr& w = b.wr[built];
    w = uroce::RecvWr{};
    w.wr_id = s.wr_id;
    std::memcpy(b.sge[built], s.sge, sizeof(ibv_sge) * s.num_sge);
    w.sg_list = b.sge[built];
    w.num_sge = int(s.num_sge);
    if (built > 0) b.wr[built - 1].next = &w;
    ++built;
  }
  return built;
}

}  // namespace

bool Session::sge_ok(uint32_t pd, const ibv_sge& sge) const {
  auto key = mr_by_key_.find(sge.lkey);
  if (key == mr_by_key_.end()) return false;
  const MappedMr& m = *key->second;
  return m.pd == pd && m.mr->contains(sge.addr, sge.length);
}

bool Session::bind_of(const SendSlot& s, uroce::SendWr& w) const {
  // The window and the region must be this client's; the engine checks
  // the rest when the bind runs (PDs, access, range, a type 2 window not
  // bound already) and completes it with IBV_WC_MW_BIND_ERR if they fail.
  const auto key = mw_by_key_.find(s.rkey & ~0xFFu);
  if (key == mw_by_key_.end()) return false;
  w.bind_mw.mw = mws_.at(key->second).mw.get();
  w.bind_mw.rkey = s.rkey;
  w.bind_mw.bind_info = uroce::MwBindInfo{nullptr, s.remote_addr, s.compare_add, s.remote_qkey};
  if (s.remote_qpn == 0) return s.remote_addr == 0 && s.compare_add == 0;  // an unbind
  const auto mr = mr_by_key_.find(s.remote_qpn);
  if (mr == mr_by_key_.end()) return false;
  w.bind_mw.bind_info.mr = mr->second->mr.get();
  return true;
}

bool Session::recv_ok(uint32_t pd, uint32_t max_sge, const RecvSlot& s) const {
  bool ok = s.num_sge <= max_sge;
  for (uint32_t k = 0; ok && k < s.num_sge; ++k) ok = sge_ok(pd, s.sge[k]);
  return ok;
}

unsigned Session::new_slots(const RingHeader& ring, uint32_t consumer, uint32_t entries) {
  // The producer index is read once; a client's index more than a ring
  // ahead ends the client.
  const uint32_t avail = ring.producer.value.load(std::memory_order_acquire) - consumer;
  if (avail > entries) return broken_ = true, 0;
  return std::min<uint32_t>(avail, kBatch);
}

bool Session::room_to_refuse(const Qp& qp, bool send) const {
  const Cq& cq = cqs_.at(send ? qp.send_cq : qp.recv_cq);
  return cq.pending.size() < cq.entries;
}

void Session::refuse(Qp& qp, uint64_t wr_id, ibv_wc_opcode op, ibv_wc_status status, bool send) {
  ibv_wc wc{};
  wc.wr_id = wr_id;
  wc.status = status;
  wc.opcode = op;
  wc.qp_num = qp.qp->qp_num();
  cqs_.at(send ? qp.send_cq : qp.recv_cq).pending.push_back(wc);
  if (!qp.failed) {
    ibv_qp_attr attr{};
    attr.qp_state = IBV_QPS_ERR;
    qp.qp->modify(attr, IBV_QP_STATE);
    qp.failed = true;
  }
}

int Session::service_sq(Qp& qp) {
  auto* ring = reinterpret_cast<RingHeader*>(arena_.base() + qp.sq_offset);
  const unsigned n = new_slots(*ring, qp.sq_consumer, qp.sq_entries);
  if (n == 0) return 0;
  static SendBatch b;  // the service thread is the only caller
  const SendSlot* slots = ring_slots<SendSlot>(ring);
  unsigned built = 0;
  // A slot that fails its checks ends the batch; it is refused after the
  // ones before it are posted, so completions keep their order.
  ibv_wc_status refusal = IBV_WC_SUCCESS;
  // The fields up to the inline bytes; those are copied only when used,
  // straight into the batch (their length is taken from the copy).
  constexpr size_t kSlotHead = offsetof(SendSlot, inline_data);
  SendSlot s;
  for (unsigned i = 0; i < n; ++i) {
    const SendSlot& shared = slots[(qp.sq_consumer + i) & (qp.sq_entries - 1)];
    std::memcpy(&s, &shared, kSlotHead);
    uroce::SendWr& w = b.wr[built];
    w = uroce::SendWr{};
    w.wr_id = s.wr_id;
    const bool is_inline = (s.send_flags & IBV_SEND_INLINE) != 0;
    bool ok = opcode_ok(qp.type, s.opcode) && (s.send_flags & ~kSendFlags) == 0;
    if (ok && is_local_op(s.opcode)) {
      w.num_sge = 0;  // sends nothing: its SGEs are not looked at
    } else if (ok && is_inline) {
      ok = s.inline_len <= qp.max_inline;  // max_inline <= kMaxInline
      if (ok) std::memcpy(b.inline_data[built], shared.inline_data, s.inline_len);
      b.sge[built][0] = ibv_sge{reinterpret_cast<uintptr_t>(b.inline_data[built]), s.inline_len, 0};
      w.num_sge = s.inline_len > 0 ? 1 : 0;
    } else if (ok) {
      ok = s.num_sge <= qp.max_send_sge;
      for (uint32_t k = 0; ok && k < s.num_sge; ++k) ok = sge_ok(qp.pd, s.sge[k]);
      if (!ok && s.num_sge <= qp.max_send_sge) {
        refusal = IBV_WC_LOC_PROT_ERR;
        break;
      }
      std::memcpy(b.sge[built], s.sge, sizeof(ibv_sge) * std::min<uint32_t>(s.num_sge, kMaxSge));
      w.num_sge = int(s.num_sge);
    }
    // UD: an address handle of this client in the QP's PD.
    const Ah* ah = nullptr;
    if (ok && qp.type == IBV_QPT_UD) {
      const auto it = ahs_.find(s.ah);
      ah = it == ahs_.end() ? nullptr : &it->second;
      ok = ah != nullptr && ah->pd == qp.pd;
    }
    if (!ok) {
      refusal = IBV_WC_LOC_QP_OP_ERR;
      break;
    }
    if (s.opcode == IBV_WR_BIND_MW && !bind_of(s, w)) {
      refusal = IBV_WC_MW_BIND_ERR;
      break;
    }
    w.sg_list = b.sge[built];
    w.opcode = ibv_wr_opcode(s.opcode);
    w.send_flags = s.send_flags;
    w.imm_data = s.imm_data;
    if (s.opcode == IBV_WR_SEND_WITH_INV || s.opcode == IBV_WR_LOCAL_INV) w.invalidate_rkey = s.imm_data;
    if (ah != nullptr)
      w.wr.ud = {ah->ah.get(), s.remote_qpn, s.remote_qkey};
    else if (s.opcode == IBV_WR_ATOMIC_CMP_AND_SWP || s.opcode == IBV_WR_ATOMIC_FETCH_AND_ADD)
      w.wr.atomic = {s.remote_addr, s.compare_add, s.swap, s.rkey};
    else
      w.wr.rdma = {s.remote_addr, s.rkey};
    if (built > 0) b.wr[built - 1].next = &w;
    ++built;
  }
  if (built > 0) {
    const uroce::SendWr* bad = nullptr;
    const int err = qp.qp->post_send(&b.wr[0], &bad);
    if (err == ENOMEM) {
      // The engine's queue is full: what was not taken stays in the ring.
      const uint32_t taken = uint32_t(bad - &b.wr[0]);
      qp.sq_consumer += taken;
      ring->consumer.value.store(qp.sq_consumer, std::memory_order_release);
      return int(taken);
    }
    if (err != 0) {
      uint32_t taken = uint32_t(bad - &b.wr[0]);
      if (room_to_refuse(qp, true)) {
        refuse(qp, bad->wr_id, wc_opcode(bad->opcode), IBV_WC_LOC_QP_OP_ERR, true);
        ++taken;
      }
      qp.sq_consumer += taken;
      ring->consumer.value.store(qp.sq_consumer, std::memory_order_release);
      return int(taken);
    }
  }
  // A refusal waits in the ring while the client leaves its CQ full: the
  // daemon holds at most a ring's worth of made completions per CQ.
  const unsigned done = refusal != IBV_WC_SUCCESS && room_to_refuse(qp, true) ? 1 : 0;
  if (done) refuse(qp, s.wr_id, wc_opcode(s.opcode), refusal, true);
  qp.sq_consumer += built + done;
  ring->consumer.value.store(qp.sq_consumer, std::memory_order_release);
  return int(built + done);
}

int Session::service_rq(Qp& qp) {
  auto* ring = reinterpret_cast<RingHeader*>(arena_.base() + qp.rq_offset);
  const unsigned n = new_slots(*ring, qp.rq_consumer, qp.rq_entries);
  if (n == 0) return 0;
  static RecvBatch b;
  RecvSlot s;
  bool refused = false;
  const unsigned built = build_recvs(ring_slots<RecvSlot>(ring), qp.rq_consumer, qp.rq_entries, n, b, s, refused,
                                     [&](const RecvSlot& slot) { return recv_ok(qp.pd, qp.max_recv_sge, slot); });
  if (built > 0) {
    const uroce::RecvWr* bad = nullptr;
    const int err = qp.qp->post_recv(&b.wr[0], &bad);
    if (err != 0) {
      uint32_t taken = uint32_t(bad - &b.wr[0]);
      if (err != ENOMEM && room_to_refuse(qp, false)) {
        refuse(qp, bad->wr_id, IBV_WC_RECV, IBV_WC_LOC_QP_OP_ERR, false);
        ++taken;
      }
      qp.rq_consumer += taken;
      ring->consumer.value.store(qp.rq_consumer, std::memory_order_release);
      return int(taken);
    }
  }
  const unsigned done = refused && room_to_refuse(qp, false) ? 1 : 0;
  if (done) refuse(qp, s.wr_id, IBV_WC_RECV, IBV_WC_LOC_PROT_ERR, false);
  qp.rq_consumer += built + done;
  ring->consumer.value.store(qp.rq_consumer, std::memory_order_release);
  return int(built + done);
}

// As service_rq, into the SRQ. A slot that fails its checks has no QP to
// complete on (ibv_post_srq_recv would have refused it at once): the SRQ
// reports IBV_EVENT_SRQ_ERR and its ring is no longer read.
int Session::service_srq(uint32_t handle, Srq& q) {
  if (q.failed) return 0;
  auto* ring = reinterpret_cast<RingHeader*>(arena_.base() + q.offset);
  const unsigned n = new_slots(*ring, q.consumer, q.entries);
  if (n == 0) return 0;
  static RecvBatch b;
  RecvSlot s;
  const unsigned built = build_recvs(ring_slots<RecvSlot>(ring), q.consumer, q.entries, n, b, s, q.failed,
                                     [&](const RecvSlot& slot) { return recv_ok(q.pd, q.max_sge, slot); });
  uint32_t taken = built;
  if (built > 0) {
    const uroce::RecvWr* bad = nullptr;
    // ENOMEM (full): the rest waits in the ring for room.
    if (q.srq->post_recv(&b.wr[0], &bad) != 0) taken = uint32_t(bad - &b.wr[0]);
  }
  q.consumer += taken;
  ring->consumer.value.store(q.consumer, std::memory_order_release);
  if (q.failed) {
    const AsyncRecord rec{uint32_t(IBV_EVENT_SRQ_ERR), EventObject::srq, handle};
    (void)!write(events_, &rec, sizeof rec);
  }
  return int(taken);
}

int Session::service_cq(Cq& cq) {
  auto* ring = reinterpret_cast<RingHeader*>(arena_.base() + cq.offset);
  // The consumer index is the client's: a wrong one only spoils its own CQ.
  const uint32_t consumer = ring->consumer.value.load(std::memory_order_acquire);
  uint32_t room = cq.entries - std::min(cq.entries, cq.producer - consumer);
  if (room == 0) return 0;
  CqSlot* slots = ring_slots<CqSlot>(ring);
  int moved = 0;
  while (room > 0 && !cq.pending.empty()) {
    slots[cq.producer++ & (cq.entries - 1)] = cq.pending.front();
    cq.pending.pop_front();
    --room, ++moved;
  }
  ibv_wc wc[kBatch];
  while (room > 0) {
    const int n = cq.cq->poll(int(std::min<uint32_t>(room, kBatch)), wc);
    if (n <= 0) break;
    for (int i = 0; i < n; ++i) slots[cq.producer++ & (cq.entries - 1)] = wc[i];
    room -= uint32_t(n);
    moved += n;
  }
  if (moved == 0) return 0;
  ring->producer.value.store(cq.producer, std::memory_order_release);
  // Armed by the client: one event for this batch, then it must arm again.
  // (Solicited-only arming is taken as "the next completion".)
  if (cq.channel != 0 && ring->notify.value.load(std::memory_order_acquire) != 0 &&
      ring->notify.value.exchange(0) != 0) {
    const uint32_t handle = cq.handle;
    (void)!write(channels_.at(cq.channel).write_fd, &handle, sizeof handle);
  }
  return moved;
}

int Session::service_posts() {
  int work = 0;
  for (auto& [h, srq] : srqs_) work += service_srq(h, srq);
  for (auto& [h, qp] : qps_) work += (qp.srq == 0 ? service_rq(qp) : 0) + service_sq(qp);
  return work;
}

int Session::service() {
  if (!has_arena()) return 0;
  int work = service_posts();
  for (auto& [h, cq] : cqs_) work += service_cq(cq);
  return work;
}

void Session::flush_posts() {
  // A verbs post is done when it returns; here it is a slot the daemon has
  // not read yet. What the client posted before a control request reaches
  // the engine before the request takes effect, so that a peer told "ready"
  // after it (receives posted, then the QP moved to RTR, then the peer
  // told) finds the receives there: a UD datagram finds no receive else,
  // and is dropped. Bounded: a client filling its rings meanwhile waits.
  for (unsigned round = 0; round < kFlushRounds && !broken_ && service_posts() > 0; ++round) {
  }
}

void Session::arm() {
  if (!has_arena()) return;
  arena_.header().need_wakeup.store(1, std::memory_order_seq_cst);
  for (auto& [h, cq] : cqs_) cq.cq->req_notify(false);
}

void Session::disarm() {
  if (has_arena()) arena_.header().need_wakeup.store(0, std::memory_order_relaxed);
}

}  // namespace uroced
