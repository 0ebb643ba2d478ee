// SPDX-License-Identifier: BSD-3-Clause
// Internal state of a queue pair, split the way rxe splits it: the
// requester sends requests, the completer turns ACKs and responses into
// completions, the responder executes incoming requests. Each unit owns its
// part of the state; the QP holds them together.
#pragma once

#include <infiniband/verbs.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "../cc/qp_cc.h"
#include "cq.h"
#include "recv_queue.h"
#include "send_queue.h"
#include "uroce/port/clock.h"
#include "uroce/verbs/counters.h"
#include "uroce/verbs/types.h"
#include "wire/header_template.h"
#include "uroce/wire/packet_fields.h"
#include "work_queue.h"
#include "wqe.h"

namespace uroce {
class ProtectionDomain;
}

namespace uroce::transport {

class EngineServices;

// The modify()-controlled attributes.
struct QpAttrs {
  ibv_mtu path_mtu = IBV_MTU_1024;
  uint32_t pmtu = 1024;  // bytes
  uint32_t dest_qpn = 0;
  uint32_t qkey = 0;
  int access_flags = 0;
  uint16_t pkey_index = 0;
  uint8_t port_num = 1;
  uint32_t sq_psn = 0;
  uint32_t rq_psn = 0;
  uint8_t timeout = 14;
  uint8_t retry_cnt = 7;
  uint8_t rnr_retry = 7;
  uint8_t min_rnr_timer = 0;
  uint8_t max_rd_atomic = 1;
  uint8_t max_dest_rd_atomic = 1;
  ibv_ah_attr ah{};
};

struct RequesterState {
  uint32_t psn = 0;          // next PSN to send
  uint32_t max_psn = 0;      // one past the highest PSN ever sent (retransmission counting)
  uint32_t wqe = 0;          // SQ index of the WQE being sent
  uint64_t offset = 0;       // bytes of that WQE already sent
  uint32_t since_ackreq = 0; // packets sent since the last AckReq
  uint32_t rd_atomic = 0;    // READ/ATOMIC WQEs sent and not yet complete
  bool need_retry = false;
  uint32_t retry_psn = 0;
  uint64_t rnr_until = 0;    // RNR back-off: send nothing before this time
};

struct CompleterState {
  uint32_t una = 0;             // oldest unacknowledged PSN
  uint8_t retry_left = 7;
  uint8_t rnr_retry_left = 7;
  uint64_t deadline = kNever;   // local ACK timeout
};

// Saved READ/ATOMIC request: for answering duplicates (READ re-executed,
// ATOMIC answered from here, never executed twice) and for sending a
// multi-packet READ response over several polls.
struct RdAtomicResource {
  enum Kind : uint8_t { none, read, atomic } kind = none;
  uint32_t generation = 0;
  uint32_t first_psn = 0;
  uint32_t last_psn = 0;
  uint64_t va = 0;
  uint32_t rkey = 0;
  uint32_t length = 0;
  uint32_t msn = 0;
  uint64_t orig = 0;  // ATOMIC: value before the operation
};

// What the responder still has to send, in PSN order.
struct RespOut {
  enum Kind : uint8_t { ack, read, atomic } kind = ack;
  uint8_t syndrome = 0;
  uint32_t psn = 0;
  uint32_t msn = 0;
  uint32_t res = 0;         // resource index (read/atomic)
  uint32_t generation = 0;
  uint32_t cursor_psn = 0;  // READ: next response PSN to send
  uint32_t poll = 0;        // ACK: the engine poll that queued it (see queue_ack)
};

// Ordered so that what each request packet reads comes first, unpadded.
struct ResponderState {
  uint32_t epsn = 0;         // expected PSN
  uint32_t msn = 0;          // messages completed
  uint32_t msg_class = 0;    // opf::send or opf::write while a message is open
  uint32_t write_rkey = 0;
  // The receive WQE taken (have_recv), else the free holder block this QP
  // swaps into the receive queue when it takes one (RecvQueue::take).
  RecvWqe recv;
  uint64_t recv_off = 0;
  uint64_t write_va = 0;     // WRITE: next target address
  uint64_t write_left = 0;
  uint64_t msg_bytes = 0;    // bytes of the open message so far
  bool nak_sent = false;     // sequence NAK sent; wait for epsn quietly
  bool have_recv = false;    // SEND/WRITE-imm: receive WQE taken
  bool drop_msg = false;     // UC: the rest of this message is dropped (until a FIRST/ONLY)
  uint32_t res_next = 0;
  std::vector<RdAtomicResource> res;
  WorkQueue<RespOut> out;
};

// The per-packet state stays small: a field added to these fails here, to
// be placed with its cost in mind.
static_assert(sizeof(RequesterState) <= 48);
static_assert(sizeof(CompleterState) <= 16);
static_assert(sizeof(RespOut) <= 28);
static_assert(sizeof(ResponderState) <= 144 && offsetof(ResponderState, res_next) < 80);

struct Qp {
  EngineServices* eng = nullptr;
  QueuePair* owner = nullptr;  // the public object, for async events
  ProtectionDomain* pd = nullptr;
  Cq* scq = nullptr;
  Cq* rcq = nullptr;
  RecvQueue* srq = nullptr;  // the SRQ's queue, if the QP has one
  QpInitAttr init{};
  uint32_t qpn = 0;
  ibv_qp_state state = IBV_QPS_RESET;
  QpAttrs attr;
  // Headers every packet of this QP shares (addresses, ports, P_Key), and
  // for a connected QP the same as bytes, from RTR on (qp_modify.cpp).
  wire::PacketFields hdr;
  wire::HeaderTemplate tmpl;

  SendQueue sq;
  RecvQueue rq;
  RequesterState req;
  CompleterState comp;
  ResponderState resp;
  TransportCounters counters;
  cc::QpCc cc;

  bool scheduled = false;   // on the engine's TX list
  bool later = false;       // on the engine's list for the next TX round
  bool timed = false;       // on the engine's timer list
  bool rebase = false;      // on the engine's list of deadlines set from an old time
  // The peer's MAC is this device's own (a QP connected to a QP of the same
  // device): frames loop back inside the engine instead of going to the
  // port. Set with the address vector (qp_modify.cpp), read per frame.
  bool to_self = false;
  // Where the engine keeps it: its place in the engine's list of QPs and,
  // while `timed`, in the timer list (removal in O(1) with thousands).
  uint32_t engine_slot = 0;
  uint32_t timer_slot = 0;

  bool is_rc() const { return init.qp_type == IBV_QPT_RC; }
  bool is_uc() const { return init.qp_type == IBV_QPT_UC; }
  bool is_ud() const { return init.qp_type == IBV_QPT_UD; }
  // RC or UC: one peer, fixed by modify to RTR, and a header template.
  bool is_connected() const { return init.qp_type != IBV_QPT_UD; }
  RecvQueue& recv_queue();
};
// Every QP holds this much besides its queues (26 cache lines).
static_assert(sizeof(Qp) <= 1664);

}  // namespace uroce::transport
