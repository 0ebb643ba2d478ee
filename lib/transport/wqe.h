// SPDX-License-Identifier: BSD-3-Clause
// Send and receive work queue entries: a posted work request copied into
// the queue (verbs lets the caller reuse its WR and SGE memory at once), plus
// the progress the transport makes on it.
//
// An entry is a compact header. Its SGEs and inline bytes live out of line,
// in a slab its queue sizes from the QP's capabilities (send_queue.h,
// recv_queue.h): a QP that asked for one SGE and no inline data pays for one
// SGE per entry, not for the device's maxima.
#pragma once

#include <infiniband/verbs.h>

#include <cstddef>
#include <cstdint>

#include "memory/sge.h"

#include "uroce/wire/ip_addr.h"
#include "uroce/wire/eth.h"

namespace uroce::transport {

// A scatter/gather list as the transport reads it: a view of SGEs stored in
// a queue's slab.
using memory::SgeList;

enum class WqeState : uint8_t {
  posted,      // requester has not started it
  in_progress, // some packets sent
  sent,        // every request packet sent; waiting for ACK or response
  failed,      // a local error stopped it; completes with `error` in order
  done,        // completed (CQE generated if signaled)
};

// Where a UD send goes, copied from its address handle at post. Kept out of
// the send WQE (only UD queues have these, one per slot).
struct UdDest {
  wire::IpAddr gid;
  wire::IpAddr sgid;  // the address handle's sgid_index, resolved at post
  wire::MacAddr mac;
  uint8_t ttl = 64;   // its hop_limit
  uint8_t dscp = 0;   // its traffic_class >> 2
  uint8_t sl = 0;     // its service level: the frame's PCP when tagged
  uint32_t qpn = 0;
  uint32_t qkey = 0;
  bool to_self = false;  // the address handle's MAC is this device's: loops back
};

// One cache line: everything the requester and the completer read or write
// per packet. The SGEs or inline bytes are in the queue's slab at this
// entry's slot (SendQueue::sgl, SendQueue::inline_bytes).
struct alignas(64) SendWqe {
  uint64_t wr_id = 0;
  uint64_t remote_addr = 0;
  uint64_t compare_add = 0;  // atomics
  uint64_t swap = 0;
  uint32_t length = 0;        // message length (max_msg_sz fits)
  uint32_t rkey = 0;
  // Immediate data (host order of the wire word), or SEND_WITH_INV's rkey
  // to invalidate: no opcode carries both.
  uint32_t imm = 0;
  uint32_t first_psn = 0;
  uint32_t last_psn = 0;
  uint32_t read_received = 0;  // READ: response bytes placed so far
  ibv_wr_opcode opcode : 8 = IBV_WR_SEND;
  ibv_wc_status error : 8 = IBV_WC_SUCCESS;  // local error found while sending
  WqeState state : 8 = WqeState::posted;
  uint8_t flags = 0;          // ibv_send_flags (all fit in 8 bits)
  uint16_t num_sge = 0;
  bool signaled = false;
  bool rd_counted = false;    // holds one of the READ/ATOMIC credits
};

// The per-packet path reads the header in one line; a field added here must
// fit in it (or go out of line).
static_assert(sizeof(SendWqe) == 64 && alignof(SendWqe) == 64);
static_assert(offsetof(SendWqe, read_received) + sizeof(uint32_t) <= 56);
static_assert(IBV_SEND_FENCE < 256 && IBV_SEND_SIGNALED < 256 && IBV_SEND_SOLICITED < 256 &&
              IBV_SEND_INLINE < 256);
static_assert(IBV_WR_DRIVER1 < 256 && IBV_WC_TM_RNDV_INCOMPLETE < 256);

// READ and the atomics: they hold a READ/ATOMIC credit and complete only
// with their response.
inline bool is_rd_atomic(ibv_wr_opcode op) {
  return op == IBV_WR_RDMA_READ || op == IBV_WR_ATOMIC_CMP_AND_SWP || op == IBV_WR_ATOMIC_FETCH_AND_ADD;
}

// Memory window operations: they run in the requester when it reaches them
// in queue order, send nothing, and complete once everything before them
// has. A bind keeps its request in the header: rkey = the window's rkey
// with the new consumer key, imm = the region's lkey, remote_addr and
// compare_add = the range, swap = the access flags. A LOCAL_INV keeps its
// key in imm.
inline bool is_local_op(ibv_wr_opcode op) { return op == IBV_WR_BIND_MW || op == IBV_WR_LOCAL_INV; }

// A receive WQE: its SGEs are block `block` of its queue's slab
// (RecvQueue::sgl). The block travels with the WQE when a responder takes it
// (RecvQueue::take), so the SGEs are never copied after posting.
struct RecvWqe {
  uint64_t wr_id = 0;
  uint64_t total = 0;   // bytes the SGEs describe
  uint32_t num_sge = 0;
  uint32_t block = 0;
};
static_assert(sizeof(RecvWqe) == 24);

}  // namespace uroce::transport
