// SPDX-License-Identifier: BSD-3-Clause
// What uroced and its clients share: the control messages (one fixed-size
// POD struct per datagram on a SOCK_SEQPACKET socket) and the layout of a
// client's arena (rings in a memfd both map). Plain data only: both sides
// include it, neither links the other, and the client links no DPDK.
// docs/daemon.md explains the protocol and its checks.
#pragma once

#include <infiniband/verbs.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace uroce::daemon {

inline constexpr uint32_t kMagic = 0x75724f44;  // "urOD"
inline constexpr uint32_t kVersion = 7;
inline constexpr const char* kDefaultSocket = "/run/uroce/uroced.sock";

enum class Op : uint32_t {
  hello = 1,
  alloc_pd,
  dealloc_pd,
  create_cq,
  destroy_cq,
  create_qp,
  destroy_qp,
  modify_qp,
  query_qp,
  alloc_mr,
  reg_mr,
  dereg_mr,
  create_comp_channel,
  destroy_comp_channel,
  // The connection manager, which runs in the daemon on its port's QP1
  // (docs/daemon.md, "The connection manager"), and the neighbour table.
  cm_open,       // AllocPdReq -> HandleRep with the read end of the client's CM event pipe
  cm_listen,     // CmListenReq -> HandleRep
  cm_connect,    // CmConnectReq -> CmIdRep
  cm_accept,     // CmAcceptReq -> HandleRep
  cm_id_op,      // CmIdReq -> HandleRep
  cm_qp_attr,    // CmIdReq -> CmQpAttrRep
  cm_get_event,  // AllocPdReq -> CmEventRep
  neighbor,      // NeighborReq -> NeighborRep
  // Shared receive queues: a ring of receive slots the client fills, which
  // the QPs created on it take from.
  create_srq,    // CreateSrqReq -> CreateSrqRep
  destroy_srq,   // HandleReq -> HandleRep (EBUSY while QPs use it)
  modify_srq,    // ModifySrqReq -> HandleRep
  query_srq,     // HandleReq -> QuerySrqRep
  // Address handles of UD QPs: a send slot names one by its handle; the
  // daemon resolves the destination when it creates one.
  create_ah,     // CreateAhReq -> HandleRep
  destroy_ah,    // HandleReq -> HandleRep
  // Memory windows: a send slot binds one (IBV_WR_BIND_MW) or invalidates
  // it (IBV_WR_LOCAL_INV) by its rkey.
  alloc_mw,      // AllocMwReq -> MwRep
  dealloc_mw,    // HandleReq -> HandleRep
};

struct ReqHeader {
  Op op;
  uint32_t size;  // of the whole request, header included
};

struct RepHeader {
  Op op;
  uint32_t size;
  int32_t status;  // 0 or an errno
  uint32_t pad = 0;
};

// ---- requests (ReqHeader first) and replies (RepHeader first) ----

// A message of type Msg, zeroed, its header naming `op` and its size.
template <typename Msg>
Msg make_message(Op op) {
  Msg m{};
  m.h.op = op;
  m.h.size = sizeof(Msg);
  return m;
}

struct HelloReq {
  ReqHeader h;
  uint32_t magic;
  uint32_t version;
};
struct HelloRep {
  RepHeader h;
  uint32_t version;
  uint32_t client_id;
  char device_name[32];
  uint8_t gid[16];  // the device's address GID (index 1)
  uint8_t link_local_gid[16];  // index 0
  uint64_t arena_bytes;
  uint32_t max_qp_wr;
  uint32_t max_cqe;
  uint64_t max_mr_size;
  uint8_t mac[6];  // the port's MAC and Ethernet MTU (ibv_query_port, node GUID)
  uint16_t mtu;
  uint32_t max_mw;  // memory windows a client may hold ([limits] max_mw)
  uint32_t pad = 0;
  // With the reply: the arena memfd, the doorbell eventfd, and the read
  // end of the client's asynchronous event pipe (AsyncRecord).
};

struct HandleReq {  // dealloc_pd, destroy_cq, destroy_qp, query_qp, dereg_mr
  ReqHeader h;
  uint32_t handle;
  uint32_t flags = 0;  // dereg_mr: kDeregUnbind
};
// DEREG_MR from a region's destructor: the client has let go of the pages,
// so windows still bound to the region are unbound (as in process) where
// ibv_dereg_mr is refused with EINVAL.
inline constexpr uint32_t kDeregUnbind = 1;
struct HandleRep {  // alloc_pd, create_comp_channel (with the channel's read end), destroy_*, modify_qp, dereg_mr
  RepHeader h;
  uint32_t handle;
  uint32_t pad = 0;
};

struct AllocPdReq {
  ReqHeader h;
};

struct CreateCqReq {
  ReqHeader h;
  uint32_t cqe;
  uint32_t channel;  // a completion channel's handle, 0: none
};
struct CreateCqRep {
  RepHeader h;
  uint32_t cq;
  uint32_t entries;     // ring slots (a power of two)
  uint64_t ring_offset; // of the RingHeader in the arena
};

struct CreateQpReq {
  ReqHeader h;
  uint32_t pd;
  uint32_t send_cq;
  uint32_t recv_cq;
  uint32_t qp_type;  // ibv_qp_type: RC, UC or UD
  uint32_t max_send_wr;
  uint32_t max_recv_wr;
  uint32_t max_send_sge;
  uint32_t max_recv_sge;
  uint32_t max_inline_data;
  uint32_t sq_sig_all;
  uint32_t srq;  // a shared receive queue's handle, 0: none (the QP's own ring)
  uint32_t pad = 0;
};
struct CreateQpRep {
  RepHeader h;
  uint32_t qp;
  uint32_t qpn;
  uint64_t sq_offset;
  uint64_t rq_offset;
  uint32_t sq_entries;
  uint32_t rq_entries;
  uint32_t max_send_sge;
  uint32_t max_recv_sge;
  uint32_t max_inline_data;
  uint32_t pad = 0;
};

struct CreateSrqReq {
  ReqHeader h;
  uint32_t pd;
  uint32_t max_wr;
  uint32_t max_sge;
  uint32_t srq_limit;
};
struct CreateSrqRep {
  RepHeader h;
  uint32_t srq;
  uint32_t entries;      // ring slots (a power of two)
  uint64_t ring_offset;  // of the RingHeader in the arena
  uint32_t max_wr;
  uint32_t max_sge;
};
struct CreateAhReq {
  ReqHeader h;
  uint32_t pd;
  uint32_t pad = 0;
  ibv_ah_attr attr;  // nothing in it is a pointer
};

struct ModifySrqReq {
  ReqHeader h;
  uint32_t srq;
  int32_t attr_mask;  // IBV_SRQ_LIMIT only
  uint32_t srq_limit;
  uint32_t pad = 0;
};
struct QuerySrqRep {
  RepHeader h;
  uint32_t max_wr;
  uint32_t max_sge;
  uint32_t srq_limit;
  uint32_t pad = 0;
};

struct ModifyQpReq {
  ReqHeader h;
  uint32_t qp;
  int32_t attr_mask;
  ibv_qp_attr attr;  // ah_attr carries a GID; nothing in it is a pointer
};
struct QueryQpRep {
  RepHeader h;
  ibv_qp_attr attr;
};

struct AllocMrReq {
  ReqHeader h;
  uint32_t pd;
  int32_t access;
  uint64_t length;
};
// The pages of a client registration come from one memfd or several (a
// range shared by an earlier registration, and the pages beside it):
// `length` bytes of the segment's memfd from `offset` hold the client's
// pages at `addr`.
inline constexpr uint32_t kMaxRegSegments = 8;
struct RegSegment {
  uint64_t addr;
  uint64_t length;
  uint64_t offset;
};
struct RegMrReq {  // with one memfd per segment, in order
  ReqHeader h;
  uint32_t pd;
  int32_t access;
  uint64_t addr;       // the client's buffer
  uint64_t length;
  uint64_t iova;       // what work requests and peers name addr by (ibv_reg_mr_iova2)
  uint64_t map_addr;   // the page-rounded range, which the segments cover in order
  uint64_t map_length;
  uint32_t segments;
  uint32_t pad = 0;
  RegSegment seg[kMaxRegSegments];
};
struct AllocMwReq {
  ReqHeader h;
  uint32_t pd;
  uint32_t type;  // ibv_mw_type
};
struct MwRep {
  RepHeader h;
  uint32_t mw;
  uint32_t rkey;  // its upper 24 bits name the window for its life
};

struct MrRep {  // alloc_mr comes with the region's memfd
  RepHeader h;
  uint32_t mr;
  uint32_t key;   // lkey == rkey
  uint64_t addr;  // alloc_mr: where the client must map it (the daemon's address)
  uint64_t length;
};

// ---- the connection manager (uroce::cm::ConnectionManager's calls) ----

inline constexpr uint32_t kCmPrivateData = 196;  // the largest field: a REP's

struct CmParam {  // uroce::cm::ConnParam
  uint8_t private_data[kCmPrivateData];
  uint32_t private_data_len;
  uint8_t responder_resources;
  uint8_t initiator_depth;
  uint8_t retry_count;
  uint8_t rnr_retry_count;
  uint8_t flow_control;
  uint8_t pad = 0;
  uint16_t local_port;
};

struct CmListenReq {
  ReqHeader h;
  uint16_t port;
  uint8_t ud;   // rdma_cm's UDP port space (SIDR)
  uint8_t on;   // listen, or stop listening
  uint32_t pad = 0;
};

struct CmConnectReq {
  ReqHeader h;
  uint32_t qp;       // the client's QP handle, or 0: a QP the client moves itself
  uint32_t qpn;      // with qp 0
  uint32_t qp_type;  // with qp 0
  uint16_t port;
  uint8_t ud;        // resolve_service (SIDR REQ) instead of a REQ
  uint8_t pad = 0;
  uint8_t peer[16];  // GID (IPv4-mapped for IPv4)
  CmParam param;
};
struct CmIdRep {
  RepHeader h;
  uint64_t id;
};

struct CmAcceptReq {
  ReqHeader h;
  uint64_t id;
  uint32_t qp;    // as in CmConnectReq
  uint32_t qpn;
  uint32_t qkey;  // ud: accept_ud's
  uint8_t ud;
  uint8_t pad[3] = {};
  CmParam param;
};

enum class CmIdOp : uint32_t { establish = 1, disconnect, release, reject };
struct CmIdReq {
  ReqHeader h;
  uint64_t id;
  CmIdOp what;  // cm_id_op only
  uint32_t qp_state;  // cm_qp_attr: the state whose attributes are asked for
  uint32_t private_data_len;  // reject's
  uint8_t private_data[kCmPrivateData];
};

struct CmQpAttrRep {
  RepHeader h;
  ibv_qp_attr attr;
  int32_t mask;
  uint32_t pad = 0;
};

struct CmEventRep {  // status EAGAIN: no event waits
  RepHeader h;
  uint32_t remaining;  // events still queued after this one (the pipe says so too)
  uint32_t type;       // uroce::cm::EventType
  uint64_t id;
  int32_t status;
  uint32_t private_data_len;
  uint8_t private_data[kCmPrivateData + 60];  // up to a MAD's 232 bytes of data
  uint8_t local[16];
  uint8_t peer[16];
  uint16_t port;
  uint16_t peer_port;
  uint32_t peer_qpn;
  uint32_t qkey;
  uint8_t responder_resources;
  uint8_t initiator_depth;
  uint8_t ud;
  uint8_t flow_control;
};

struct NeighborReq {
  ReqHeader h;
  uint8_t ip[16];
  uint32_t start;  // start resolving unless the MAC is known
  uint32_t pad = 0;
};
struct NeighborRep {
  RepHeader h;
  uint32_t state;  // uroce::NeighborState
  uint8_t mac[6];
  uint8_t reachable;
  uint8_t pad = 0;
};

// One asynchronous event of a client's object, written by the daemon into
// the client's event pipe (never blocking: a full pipe drops it).
enum class EventObject : uint32_t { device = 0, qp = 1, cq = 2, srq = 3 };
struct AsyncRecord {
  uint32_t event_type;  // ibv_event_type
  EventObject object;
  uint32_t handle;
  uint32_t pad = 0;
};

// ---- the arena ----

inline constexpr uint32_t kArenaHeaderBytes = 4096;
inline constexpr uint32_t kMaxSge = 4;
inline constexpr uint32_t kMaxInline = 256;

struct ArenaHeader {
  uint32_t magic;
  uint32_t version;
  uint64_t bytes;
  // Set by the daemon before it sleeps: a client that publishes work then
  // writes the doorbell eventfd.
  alignas(64) std::atomic<uint32_t> need_wakeup;
};

struct alignas(64) RingIndex {
  std::atomic<uint32_t> value;
};

// Slots follow the header; indices run free and are masked by entries-1.
// `notify` is a CQ's: the client arms it (kNotifyNext), the daemon clears it
// and writes the CQ's handle into the CQ's completion channel when it next
// moves completions into the ring.
struct RingHeader {
  RingIndex producer;
  RingIndex consumer;
  RingIndex notify;
};
inline constexpr uint32_t kNotifyNext = 1;
inline constexpr uint32_t kNotifySolicited = 2;
inline constexpr size_t kRingHeaderBytes = sizeof(RingHeader);

// IBV_WR_BIND_MW reuses the fields: rkey is the window's new rkey (which
// names the window), remote_qpn the region's lkey (0: unbind), remote_addr
// and compare_add the range, remote_qkey the window's access flags.
struct SendSlot {
  uint64_t wr_id;
  uint32_t opcode;      // ibv_wr_opcode
  uint32_t send_flags;  // ibv_send_flags
  uint32_t imm_data;    // or invalidate_rkey
  uint16_t num_sge;
  uint16_t inline_len;  // IBV_SEND_INLINE: bytes in inline_data, sge unused
  uint64_t remote_addr;
  uint64_t compare_add;
  uint64_t swap;
  uint32_t rkey;
  uint32_t ah;  // UD: the address handle's handle, and the destination QP
  uint32_t remote_qpn;
  uint32_t remote_qkey;
  ibv_sge sge[kMaxSge];
  uint8_t inline_data[kMaxInline];
};
static_assert(sizeof(SendSlot) % 64 == 0);
static_assert(offsetof(SendSlot, sge) == 64, "the fields before the SGEs fill one cache line");

struct RecvSlot {
  uint64_t wr_id;
  uint32_t num_sge;
  uint32_t pad;
  ibv_sge sge[kMaxSge];
};

using CqSlot = ibv_wc;

template <typename Slot>
inline Slot* ring_slots(void* ring_header) {
  return reinterpret_cast<Slot*>(static_cast<uint8_t*>(ring_header) + kRingHeaderBytes);
}

template <typename Slot>
inline constexpr size_t ring_bytes(uint32_t entries) {
  return kRingHeaderBytes + size_t(entries) * sizeof(Slot);
}

}  // namespace uroce::daemon
