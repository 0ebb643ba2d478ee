// SPDX-License-Identifier: BSD-3-Clause
#include "qp_submit.h"

#include <rte_errno.h>
#include <rte_ring.h>
#include <rte_ring_elem.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "../transport/post.h"
#include "../transport/qp.h"
#include "../transport/transport.h"

namespace uroce::detail {
namespace {

enum Kind : uint32_t { kSend = 1, kRecv = 2 };

// A command: this header, then sge_slots ibv_sge, then the inline bytes.
// A receive uses wr.wr_id and wr.num_sge only.
struct alignas(16) Cmd {
  uint32_t kind;
  uint32_t pad;
  SendWr wr;
};
static_assert(sizeof(Cmd) % 16 == 0 && sizeof(ibv_sge) == 16);

constexpr unsigned kBurst = 16;

ibv_sge* sges(uint8_t* cmd) { return reinterpret_cast<ibv_sge*>(cmd + sizeof(Cmd)); }
uint8_t* inline_bytes(uint8_t* cmd, const QpSubmit& s) { return cmd + sizeof(Cmd) + s.sge_slots * sizeof(ibv_sge); }

int enqueue(QpSubmit& s, const uint8_t* cmd) {
  // Cannot be full while the counts above hold; kept as the last guard.
  return rte_ring_sp_enqueue_elem(s.ring, const_cast<uint8_t*>(cmd), s.esize) == 0 ? 0 : ENOMEM;
}

void build_send(uint8_t* buf, const QpSubmit& s, const SendWr& wr) {
  Cmd c{kSend, 0, wr};
  c.wr.next = nullptr;
  c.wr.sg_list = nullptr;
  std::memcpy(buf, &c, sizeof c);
  if (wr.num_sge > 0) std::memcpy(sges(buf), wr.sg_list, size_t(wr.num_sge) * sizeof(ibv_sge));
  if (wr.send_flags & IBV_SEND_INLINE) {
    // The caller may overwrite these bytes once post returns: copy now.
    uint8_t* out = inline_bytes(buf, s);
    for (int i = 0; i < wr.num_sge; ++i) {
      std::memcpy(out, reinterpret_cast<const void*>(uintptr_t(wr.sg_list[i].addr)), wr.sg_list[i].length);
      out += wr.sg_list[i].length;
    }
  }
}

// A WR that passed the caller's checks but that the transport refused when
// it ran: it must still complete, never vanish.
void refused(transport::Qp& qp, transport::Cq& cq, uint64_t wr_id, ibv_wc_opcode op) {
  ibv_wc wc{};
  wc.wr_id = wr_id;
  wc.status = IBV_WC_LOC_QP_OP_ERR;
  wc.opcode = op;
  wc.qp_num = qp.qpn;
  cq.push(wc);
}

void run(QpSubmit& s, transport::Qp& qp, uint8_t* cmd) {
  Cmd& c = *reinterpret_cast<Cmd*>(cmd);
  ibv_sge* sg = sges(cmd);
  c.wr.sg_list = c.wr.num_sge > 0 ? sg : nullptr;
  if (c.kind == kRecv) {
    ++s.exec_recvs;
    RecvWr wr;
    wr.wr_id = c.wr.wr_id;
    wr.sg_list = c.wr.sg_list;
    wr.num_sge = c.wr.num_sge;
    const RecvWr* bad = nullptr;
    if (transport::post_recv(qp, &wr, &bad) != 0) refused(qp, *qp.rcq, wr.wr_id, IBV_WC_RECV);
    return;
  }
  ++s.exec_sends;
  if (c.wr.send_flags & IBV_SEND_INLINE) {
    // The transport copies inline data from the SGEs: point them at the copy.
    uint8_t* data = inline_bytes(cmd, s);
    for (int i = 0; i < c.wr.num_sge; ++i) {
      sg[i].addr = uintptr_t(data);
      data += sg[i].length;
    }
  }
  const SendWr* bad = nullptr;
  if (transport::post_send(qp, &c.wr, &bad) != 0) refused(qp, *qp.scq, c.wr.wr_id, transport::wc_opcode(c.wr.opcode));
}

bool blocks_send(ibv_qp_state st) { return st == IBV_QPS_RESET || st == IBV_QPS_INIT || st == IBV_QPS_RTR; }

}  // namespace

QpSubmit::~QpSubmit() { rte_ring_free(ring); }

bool make_submit(QpSubmit& s, const transport::Qp& qp, std::string& error) {
  s.max_send_wr = qp.init.cap.max_send_wr;
  s.max_recv_wr = qp.srq ? 0 : qp.rq.wq.capacity();
  s.max_recv_sge = qp.rq.max_sge;
  s.sge_slots = std::max(qp.init.cap.max_send_sge, qp.rq.max_sge);
  const uint32_t bytes = uint32_t(sizeof(Cmd)) + s.sge_slots * uint32_t(sizeof(ibv_sge)) + qp.init.cap.max_inline_data;
  s.esize = (bytes + 15) & ~15u;
  s.scratch.assign(size_t(s.esize) * kBurst, 0);
  s.staging.assign(s.esize / 16, QpSubmit::Staged{});
  static std::atomic<unsigned> serial{0};
  const std::string name = "uroce_sq" + std::to_string(serial++);
  // Every WR the QP may hold fits: the caller checks room before enqueuing.
  // (At least one slot: a QP with neither queue still takes no post.)
  s.ring = rte_ring_create_elem(name.c_str(), s.esize, std::max(1u, s.max_send_wr + s.max_recv_wr), SOCKET_ID_ANY,
                                RING_F_SP_ENQ | RING_F_SC_DEQ | RING_F_EXACT_SZ);
  if (s.ring == nullptr) {
    error = "QP " + std::to_string(qp.qpn) + ": cannot create its submission ring of " +
            std::to_string(s.max_send_wr + s.max_recv_wr) + " x " + std::to_string(s.esize) +
            " bytes: " + rte_strerror(rte_errno);
    return false;
  }
  return true;
}

void sync_submit(QpSubmit& s, const transport::Qp& qp) {
  const uint32_t in_rq = qp.srq ? 0 : qp.rq.wq.size();
  s.exec_sends = s.posted_sends = qp.sq.size();
  s.exec_recvs = s.posted_recvs = in_rq;
  s.retired_sends.store(0, std::memory_order_relaxed);
  s.retired_recvs.store(0, std::memory_order_relaxed);
  s.state = qp.state;
  s.doorbell.store(false, std::memory_order_relaxed);
  s.busy = false;
}

int submit_send(QpSubmit& s, const transport::Qp& qp, const SendWr* wr, const SendWr** bad, bool& queued) {
  uint8_t* buf = reinterpret_cast<uint8_t*>(s.staging.data());
  for (; wr != nullptr; wr = wr->next) {
    int err = 0;
    if (blocks_send(s.state))
      err = EINVAL;
    else if (s.posted_sends - s.retired_sends.load(std::memory_order_acquire) >= s.max_send_wr)
      err = ENOMEM;
    else
      err = transport::check_send(qp, *wr);
    if (err == 0) {
      build_send(buf, s, *wr);
      err = enqueue(s, buf);
    }
    if (err) {
      if (bad) *bad = wr;
      return err;
    }
    ++s.posted_sends;
    queued = true;
  }
  return 0;
}

int check_submit_chain(const QpSubmit& s, const transport::Qp& qp, const SendWr* wr, const SendWr** bad) {
  uint64_t outstanding = s.posted_sends - s.retired_sends.load(std::memory_order_acquire);
  for (; wr != nullptr; wr = wr->next) {
    int err = 0;
    if (blocks_send(s.state))
      err = EINVAL;
    else if (outstanding >= s.max_send_wr)
      err = ENOMEM;
    else
      err = transport::check_send(qp, *wr);
    if (err) {
      if (bad) *bad = wr;
      return err;
    }
    ++outstanding;
  }
  return 0;
}

int submit_recv(QpSubmit& s, const transport::Qp& qp, const RecvWr* wr, const RecvWr** bad, bool& queued) {
  uint8_t* buf = reinterpret_cast<uint8_t*>(s.staging.data());
  for (; wr != nullptr; wr = wr->next) {
    int err = 0;
    if (s.state == IBV_QPS_RESET || qp.srq != nullptr)
      err = EINVAL;
    else if (wr->num_sge < 0 || uint32_t(wr->num_sge) > s.max_recv_sge || (wr->num_sge && !wr->sg_list))
      err = EINVAL;
    else if (s.posted_recvs - s.retired_recvs.load(std::memory_order_acquire) >= s.max_recv_wr)
      err = ENOMEM;
    if (err == 0) {
      Cmd c{kRecv, 0, SendWr{}};
      c.wr.wr_id = wr->wr_id;
      c.wr.num_sge = wr->num_sge;
      std::memcpy(buf, &c, sizeof c);
      if (wr->num_sge > 0) std::memcpy(sges(buf), wr->sg_list, size_t(wr->num_sge) * sizeof(ibv_sge));
      err = enqueue(s, buf);
    }
    if (err) {
      if (bad) *bad = wr;
      return err;
    }
    ++s.posted_recvs;
    queued = true;
  }
  return 0;
}

int execute(QpSubmit& s, transport::Qp& qp) {
  int ran = 0;
  for (;;) {
    const unsigned n = rte_ring_sc_dequeue_burst_elem(s.ring, s.scratch.data(), s.esize, kBurst, nullptr);
    for (unsigned i = 0; i < n; ++i) run(s, qp, s.scratch.data() + size_t(i) * s.esize);
    ran += int(n);
    if (n < kBurst) return ran;
  }
}

bool publish_retired(QpSubmit& s, const transport::Qp& qp) {
  const uint32_t in_sq = qp.sq.size();
  const uint32_t in_rq = qp.srq ? 0 : qp.rq.wq.size();
  const uint64_t sends = s.exec_sends - in_sq;
  const uint64_t recvs = s.exec_recvs - in_rq;
  // The engine is the only writer: compare with its own last store.
  if (s.retired_sends.load(std::memory_order_relaxed) != sends) s.retired_sends.store(sends, std::memory_order_release);
  if (s.retired_recvs.load(std::memory_order_relaxed) != recvs) s.retired_recvs.store(recvs, std::memory_order_release);
  return in_sq != 0 || in_rq != 0;
}

}  // namespace uroce::detail
