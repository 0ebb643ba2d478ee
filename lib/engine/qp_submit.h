// SPDX-License-Identifier: BSD-3-Clause
// Threaded mode's submission queue of one QP: a single-producer/single-
// consumer rte_ring of fixed-size commands, each a copy of one posted WR,
// its SGEs and (IBV_SEND_INLINE) its inline bytes, since verbs lets the
// caller reuse all of them once post returns.
//
// The caller's thread checks what does not depend on the transport's
// progress (the state its own control calls set, opcode, sizes) and whether
// the queue has room; so errors stay synchronous, as in embedded mode. Room
// is exact: the engine publishes how many WRs the transport has retired
// (completed, flushed or dropped) before it hands out their completions, so
// a WR completion polled means its slot is free again, as verbs promises.
#pragma once

#include <infiniband/verbs.h>

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "uroce/verbs/types.h"

struct rte_ring;

namespace uroce::transport {
struct Qp;
}

namespace uroce::detail {

class EngineThread;

struct QpSubmit {
  QpSubmit() = default;
  ~QpSubmit();
  QpSubmit(const QpSubmit&) = delete;
  QpSubmit& operator=(const QpSubmit&) = delete;

  EngineThread* thread = nullptr;
  transport::Qp* qp = nullptr;  // the QP whose posts these are
  rte_ring* ring = nullptr;
  uint32_t esize = 0;         // bytes per command
  uint32_t sge_slots = 0;     // SGEs a command holds
  uint32_t max_send_wr = 0;
  uint32_t max_recv_wr = 0;   // 0 with an SRQ
  uint32_t max_recv_sge = 0;

  // Caller's side (one application thread per QP at a time).
  // One command being built: esize bytes, sized from the QP's caps.
  struct alignas(16) Staged {
    uint8_t bytes[16];
  };
  std::vector<Staged> staging;
  uint64_t posted_sends = 0;
  uint64_t posted_recvs = 0;
  // As the last control call left it: written under a pause, read by the
  // posting threads, which verbs lets run meanwhile (a modify to ERR while
  // another thread posts).
  std::atomic<ibv_qp_state> state{IBV_QPS_RESET};

  // Set by the caller, cleared by the engine: the QP is in the doorbell ring.
  alignas(64) std::atomic<bool> doorbell{false};
  // Written by the engine only.
  alignas(64) std::atomic<uint64_t> retired_sends{0};
  std::atomic<uint64_t> retired_recvs{0};

  // Engine's side.
  alignas(64) uint64_t exec_sends = 0;
  uint64_t exec_recvs = 0;
  bool busy = false;              // on the engine thread's busy list
  std::vector<uint8_t> scratch;   // a burst of dequeued commands
};

// Sizes and creates the ring for qp's queues; false with a message on failure.
bool make_submit(QpSubmit& s, const transport::Qp& qp, std::string& error);
// Counters restart from the queues as they stand (no engine thread, or paused).
void sync_submit(QpSubmit& s, const transport::Qp& qp);

// Caller's side: check and enqueue each WR; 0, or EINVAL/ENOMEM with *bad
// at the first WR not posted. `queued` tells whether any WR was enqueued.
int submit_send(QpSubmit& s, const transport::Qp& qp, const SendWr* wr, const SendWr** bad, bool& queued);
// Whether submit_send would take every WR of the chain: 0, or its errno
// with *bad at the first WR it would refuse. Enqueues nothing.
int check_submit_chain(const QpSubmit& s, const transport::Qp& qp, const SendWr* wr, const SendWr** bad);
int submit_recv(QpSubmit& s, const transport::Qp& qp, const RecvWr* wr, const RecvWr** bad, bool& queued);

// Engine's side: run every queued command through the transport (a WR the
// transport refuses still completes, with IBV_WC_LOC_QP_OP_ERR); returns
// how many ran.
int execute(QpSubmit& s, transport::Qp& qp);
// Engine's side: publishes the retired counts; false when qp holds no WR.
bool publish_retired(QpSubmit& s, const transport::Qp& qp);

}  // namespace uroce::detail
