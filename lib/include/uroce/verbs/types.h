// SPDX-License-Identifier: BSD-3-Clause
// Work requests and creation attributes of the verbs API.
//
// Enum values and most structs are rdma-core's own (<infiniband/verbs.h>):
// ibv_wr_opcode, ibv_send_flags, ibv_wc (completions), ibv_qp_attr and its
// mask bits (modify/query), ibv_sge, ibv_ah_attr. Porting a verbs program is
// then a matter of renaming calls. The work requests are uroce's own only
// because a UD request names an AddressHandle of ours, not an ibv_ah.
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>
#include <optional>

#include "uroce/cc/dcqcn.h"

namespace uroce {

class AddressHandle;
class CompletionQueue;
class MemoryRegion;
class MemoryWindow;
class QueuePair;
class SharedReceiveQueue;

// Mirrors struct ibv_mw_bind_info: the range of `mr` a window is bound to.
struct MwBindInfo {
  MemoryRegion* mr = nullptr;  // nullptr (with addr and length 0): unbinds a type 1 window
  uint64_t addr = 0;
  uint64_t length = 0;
  unsigned mw_access_flags = 0;  // IBV_ACCESS_REMOTE_READ / _WRITE / _ATOMIC
};

// Mirrors struct ibv_mw_bind (QueuePair::bind_mw, for type 1 windows).
struct MwBind {
  uint64_t wr_id = 0;
  unsigned send_flags = 0;  // ibv_send_flags
  MwBindInfo bind_info;
};

// Mirrors struct ibv_send_wr, field for field (bind_mw as its own member).
struct SendWr {
  uint64_t wr_id = 0;
  SendWr* next = nullptr;
  ibv_sge* sg_list = nullptr;
  int num_sge = 0;
  ibv_wr_opcode opcode = IBV_WR_SEND;
  unsigned send_flags = 0;  // ibv_send_flags
  uint32_t imm_data = 0;    // network byte order, as in verbs
  uint32_t invalidate_rkey = 0;  // IBV_WR_SEND_WITH_INV, IBV_WR_LOCAL_INV
  union {
    struct {
      uint64_t remote_addr;
      uint32_t rkey;
    } rdma;
    struct {
      uint64_t remote_addr;
      uint64_t compare_add;
      uint64_t swap;
      uint32_t rkey;
    } atomic;
    struct {
      AddressHandle* ah;
      uint32_t remote_qpn;
      uint32_t remote_qkey;
    } ud;
  } wr{};
  // IBV_WR_BIND_MW: the window, the new rkey (its low 8 bits are taken,
  // the rest is the window's) and the range.
  struct {
    MemoryWindow* mw = nullptr;
    uint32_t rkey = 0;
    MwBindInfo bind_info;
  } bind_mw;
};

// Mirrors struct ibv_recv_wr.
struct RecvWr {
  uint64_t wr_id = 0;
  RecvWr* next = nullptr;
  ibv_sge* sg_list = nullptr;
  int num_sge = 0;
};

// Mirrors struct ibv_qp_init_attr (ibv_qp_cap for the capacities).
struct QpInitAttr {
  CompletionQueue* send_cq = nullptr;
  CompletionQueue* recv_cq = nullptr;
  SharedReceiveQueue* srq = nullptr;
  ibv_qp_cap cap{};          // max_send_wr, max_recv_wr, max_send_sge, max_recv_sge, max_inline_data
  ibv_qp_type qp_type = IBV_QPT_RC;  // IBV_QPT_RC, IBV_QPT_UC or IBV_QPT_UD
  int sq_sig_all = 0;
  // Congestion control of this QP; unset = the device's (DeviceConfig::cc).
  std::optional<cc::CcConfig> cc;
};

// Mirrors struct ibv_srq_init_attr's ibv_srq_attr.
struct SrqInitAttr {
  uint32_t max_wr = 0;
  uint32_t max_sge = 1;
};

// Limits of a device (the subset of ibv_device_attr that applies).
struct DeviceLimits {
  // QPs per device: the engine finds a QP by the low 16 bits of its QPN.
  uint32_t max_qp = 65535 - 0x11;
  uint32_t max_qp_wr = 16384;
  uint32_t max_sge = 32;
  uint32_t max_inline_data = 512;
  uint32_t max_cqe = 1 << 20;
  uint32_t max_qp_rd_atom = 128;
  uint32_t max_mr = 65535;
  uint32_t max_mw = 65535;  // memory windows, type 1 and 2 together
  uint64_t max_mr_size = uint64_t(1) << 40;
  uint32_t max_msg_sz = 1u << 31;
};

// An asynchronous event (ibv_get_async_event's ibv_async_event, with our
// objects). Produced: IBV_EVENT_QP_FATAL (the transport moved an RC QP to
// the error state: retries or RNR retries exhausted, a NAK, a remote or
// local access error; not a modify to ERR), IBV_EVENT_QP_LAST_WQE_REACHED
// (a QP on an SRQ entered the error state, by any cause),
// IBV_EVENT_CQ_ERR (the first completion that found a CQ full: it is kept
// all the same, CompletionQueue::overflowed) and
// IBV_EVENT_SRQ_LIMIT_REACHED. docs/verbs.md lists those that are not.
struct AsyncEvent {
  ibv_event_type event_type = IBV_EVENT_DEVICE_FATAL;
  SharedReceiveQueue* srq = nullptr;  // SRQ events
  QueuePair* qp = nullptr;            // QP events
  CompletionQueue* cq = nullptr;      // CQ events
};

// Where a peer's MAC address stands (ARP for IPv4, ND for IPv6).
enum class NeighborState { unknown, resolving, reachable, failed };

}  // namespace uroce
