// SPDX-License-Identifier: BSD-3-Clause
// One connected client: its arena, its object tables (handles are per
// client, so a client names only its own objects), its quotas, the control
// requests it sends and the rings it fills (docs/daemon.md).
#pragma once

#include <sys/socket.h>

#include <cstdint>
#include <deque>
#include <array>
#include <map>
#include <set>
#include <memory>
#include <unordered_map>
#include <utility>
#include <vector>

#include "cm_hub.h"
#include "daemon/protocol.h"
#include "daemon/socket_io.h"
#include "settings.h"
#include "telemetry.h"
#include "uroce/verbs/verbs.h"

struct rte_device;

namespace uroced {

// The client's shared memory: a sealed memfd of fixed size, carved into
// rings first fit.
class Arena {
 public:
  bool create(uint64_t bytes, std::string& error);
  ~Arena();
  int fd() const { return fd_; }
  uint8_t* base() const { return base_; }
  uint64_t bytes() const { return bytes_; }
  uroce::daemon::ArenaHeader& header() const { return *reinterpret_cast<uroce::daemon::ArenaHeader*>(base_); }
  // An offset 64-byte aligned, or 0 if there is no room.
  uint64_t alloc(uint64_t bytes);
  void release(uint64_t offset, uint64_t bytes);

 private:
  int fd_ = -1;
  uint8_t* base_ = nullptr;
  uint64_t bytes_ = 0;
  std::map<uint64_t, uint64_t> free_;  // offset -> length
};

// Where alloc_mr's regions come from (docs/daemon.md, "Memory").
struct RegionMemory {
  bool hugepages = true;  // a region of a huge page or more on huge pages, when the kernel has them
  uint16_t dma_port = UINT16_MAX;  // the DPDK port whose device maps them for DMA
};

// A region and the mapping that backs it in the daemon; the mapping stays
// until the region is deregistered (no frame points into it any more).
struct MappedMr {
  std::unique_ptr<uroce::MemoryRegion> mr;
  uint32_t pd = 0;
  void* map = nullptr;
  size_t map_len = 0;
  // Huge pages registered with DPDK (rte_extmem_register), and the device
  // that maps them for DMA (nullptr: none does, a software port).
  bool extmem = false;
  rte_device* dma_dev = nullptr;
  void unmap();
  ~MappedMr();
  MappedMr() = default;
  MappedMr(MappedMr&& o) noexcept;
  MappedMr& operator=(MappedMr&& o) noexcept;
};

// What a dead client leaves behind until its regions can go.
struct Leftover {
  std::vector<std::unique_ptr<uroce::ProtectionDomain>> pds;
  std::vector<MappedMr> mrs;
  // True once everything is released.
  bool release();
};

// A memory window; a send slot names it by its rkey.
struct Mw {
  std::unique_ptr<uroce::MemoryWindow> mw;
  uint32_t pd = 0;
};

struct Pd {
  std::unique_ptr<uroce::ProtectionDomain> pd;
  uint32_t children = 0;
};

// A UD destination; a send slot names it by handle. A WR posted with it
// carries a copy of the destination once the engine takes it, and
// destroying it first lets the engine take every WR already posted.
struct Ah {
  std::unique_ptr<uroce::AddressHandle> ah;
  uint32_t pd = 0;
};

// A client's completion channel: the daemon writes CQ handles into the
// pipe whose read end the client holds; never blocking (a full pipe drops
// the event: the client has events waiting anyway).
struct Channel {
  int write_fd = -1;
  uint32_t users = 0;  // CQs that report to it
  ~Channel();
  Channel() = default;
  Channel(Channel&& o) noexcept : write_fd(std::exchange(o.write_fd, -1)), users(o.users) {}
};

struct Cq {
  std::unique_ptr<uroce::CompletionQueue> cq;
  uint32_t handle = 0;   // the client's name for it, written into its channel
  uint32_t channel = 0;
  uint64_t offset = 0;
  uint64_t bytes = 0;
  uint32_t entries = 0;
  uint32_t producer = 0;        // the daemon's copy: the arena's is only written
  std::deque<ibv_wc> pending;   // made here (a refused WQE), waiting for room; at most `entries`
  uint32_t users = 0;           // QPs that complete into it
  bool events_armed = false;
};

// A shared receive queue: the ring the client fills, the daemon's SRQ.
struct Srq {
  std::unique_ptr<uroce::SharedReceiveQueue> srq;
  uint32_t pd = 0;
  uint64_t offset = 0, bytes = 0;
  uint32_t entries = 0;
  uint32_t consumer = 0;  // the daemon's copy
  uint32_t max_sge = 0;
  uint32_t users = 0;     // QPs created on it
  bool failed = false;    // a refused slot: IBV_EVENT_SRQ_ERR, the ring is no longer read
};

struct Qp {
  std::unique_ptr<uroce::QueuePair> qp;
  uint32_t pd = 0, send_cq = 0, recv_cq = 0;
  uint32_t srq = 0;  // its shared receive queue, 0: its own ring
  ibv_qp_type type = IBV_QPT_RC;
  uint64_t sq_offset = 0, rq_offset = 0, sq_bytes = 0, rq_bytes = 0;
  uint32_t sq_entries = 0, rq_entries = 0;
  uint32_t sq_consumer = 0, rq_consumer = 0;  // the daemon's copies
  uint32_t max_send_sge = 0, max_recv_sge = 0, max_inline = 0;
  bool failed = false;  // a refused WQE moved it to the error state
};

class Session {
 public:
  Session(uroce::Device& device, uroce::CompletionChannel& channel, CmHub& cm, const Limits& limits,
          const RegionMemory& memory, int sock, const ucred& peer, uint32_t id);
  ~Session();
  int sock() const { return sock_; }
  int doorbell() const { return doorbell_; }
  uint32_t id() const { return id_; }
  const ucred& peer() const { return peer_; }
  bool has_arena() const { return arena_.base() != nullptr; }
  // A ring index out of range: the client is ended.
  bool broken() const { return broken_; }
  // The connection manager's events for this client.
  CmInbox& cm_inbox() { return inbox_; }

  // One control request from the socket. False: the client is gone or
  // broke the protocol, tear it down.
  bool on_readable();
  // Moves new WQEs from the arena's rings to the QPs and completions from
  // the CQs to the arena; the amount of work done.
  int service();
  // Before sleeping: ask for a wakeup and for CQ events.
  void arm();
  void disarm();
  // An event of one of this client's objects goes into its event pipe;
  // false if the object is not this client's.
  bool forward_event(const uroce::AsyncEvent& ev);
  // What telemetry shows of this client and its QPs (each QP's state and
  // congestion control read through the public API, which parks the engine).
  void describe(ClientView& client, std::vector<QpView>& qps) const;
  // Destroys everything the client made; what cannot go yet goes to `left`.
  void teardown(Leftover& left);

 private:
  bool hello(const void* msg, size_t len);
  void dispatch(uroce::daemon::Op op, const void* msg, size_t len, uroce::daemon::Received& r);
  int alloc_pd(uint32_t& handle);
  // A handle no live object of this client holds, never 0: the counter
  // wraps after 2^32 creations, onto handles long-lived objects may still hold.
  uint32_t new_handle();
  int dealloc_pd(uint32_t handle);
  int create_cq(const uroce::daemon::CreateCqReq& req, uroce::daemon::CreateCqRep& rep);
  int destroy_cq(uint32_t handle);
  int create_qp(const uroce::daemon::CreateQpReq& req, uroce::daemon::CreateQpRep& rep);
  int destroy_qp(uint32_t handle);
  int create_srq(const uroce::daemon::CreateSrqReq& req, uroce::daemon::CreateSrqRep& rep);
  int destroy_srq(uint32_t handle);
  int modify_srq(const uroce::daemon::ModifySrqReq& req);
  int query_srq(uint32_t handle, uroce::daemon::QuerySrqRep& rep);
  int create_ah(const uroce::daemon::CreateAhReq& req, uint32_t& handle);
  int destroy_ah(uint32_t handle);
  int alloc_mw(const uroce::daemon::AllocMwReq& req, uroce::daemon::MwRep& rep);
  int dealloc_mw(uint32_t handle);
  int modify_qp(const uroce::daemon::ModifyQpReq& req);
  int query_qp(uint32_t handle, ibv_qp_attr& attr);
  int alloc_mr(const uroce::daemon::AllocMrReq& req, uroce::daemon::MrRep& rep, int& fd);
  // The memfd of a new region: on huge pages (registered with DPDK) when
  // asked and possible, else 4 KiB pages; -1 if neither.
  int region_memfd(uint64_t length, MappedMr& m);
  int reg_mr(const uroce::daemon::RegMrReq& req, uroce::daemon::MrRep& rep, uroce::daemon::Received& r);
  int dereg_mr(uint32_t handle, uint32_t flags);
  int create_channel(uint32_t& handle, int& read_fd);
  int destroy_channel(uint32_t handle);
  // Registers `length` bytes at `host` (in m's mapping) under the client's
  // address `iova`.
  int register_mapping(uint32_t pd, MappedMr&& m, void* host, uint64_t iova, uint64_t length, int access,
                       uroce::daemon::MrRep& rep);
  bool reply(const void* rep, size_t len, int fd = -1);
  // The connection manager's calls and the neighbour table (session_cm.cpp).
  void dispatch_cm(uroce::daemon::Op op, const void* msg, size_t len);
  uroce::QueuePair* own_qp(uint32_t handle);
  bool owns_qpn(uint32_t qpn) const;

  // New WQEs of every ring into the engine (a batch per ring); the work done.
  int service_posts();
  // Every WQE the client posted so far, before a control request runs.
  void flush_posts();
  static constexpr unsigned kFlushRounds = 1024;
  int service_sq(Qp& qp);
  int service_rq(Qp& qp);
  int service_srq(uint32_t handle, Srq& srq);
  int service_cq(Cq& cq);
  // Slots the client has published past `consumer`, at most a batch.
  unsigned new_slots(const uroce::daemon::RingHeader& ring, uint32_t consumer, uint32_t entries);
  // A WQE that fails validation: an error completion, the QP to error.
  void refuse(Qp& qp, uint64_t wr_id, ibv_wc_opcode op, ibv_wc_status status, bool send);
  // False while the CQ already holds a ring's worth of refusals the client
  // has not made room for: the WQE stays in its ring until then.
  bool room_to_refuse(const Qp& qp, bool send) const;
  bool sge_ok(uint32_t pd, const ibv_sge& sge) const;
  // A BIND_MW slot's window and region into w; false if either is not
  // this client's.
  bool bind_of(const uroce::daemon::SendSlot& s, uroce::SendWr& w) const;
  // A receive slot's SGE count and every SGE (a copy out of the ring).
  bool recv_ok(uint32_t pd, uint32_t max_sge, const uroce::daemon::RecvSlot& s) const;
  // ENOMEM, what a verbs program gets from a device out of room; the
  // first refusal of each quota is logged so an operator sees which one.
  int over_quota(const char* key, uint64_t limit);
  // One more region of map_len bytes (whole pages): 0 or ENOMEM.
  int mr_quota(uint64_t map_len);
  // The same, quietly.
  bool fits(uint64_t map_len) const;

  uroce::Device& device_;
  uroce::CompletionChannel& channel_;
  CmHub& cm_;
  CmInbox inbox_;
  std::set<std::array<uint8_t, 16>> asked_;  // addresses it had resolved (NEIGHBOR)
  const Limits limits_;
  const RegionMemory memory_;
  int sock_;
  ucred peer_;
  uint32_t id_;
  int doorbell_ = -1;
  int events_ = -1;  // the write end of the client's event pipe
  Arena arena_;
  uint32_t next_handle_ = 1;
  uint64_t mr_bytes_ = 0;
  std::unordered_map<uint32_t, Pd> pds_;
  std::unordered_map<uint32_t, Cq> cqs_;
  std::unordered_map<uint32_t, Qp> qps_;
  std::unordered_map<uint32_t, Srq> srqs_;
  std::unordered_map<uint32_t, Ah> ahs_;
  std::unordered_map<uint32_t, Mw> mws_;
  // A window's rkey without its low 8 bits -> its handle.
  std::unordered_map<uint32_t, uint32_t> mw_by_key_;
  std::unordered_map<uint32_t, MappedMr> mrs_;
  std::unordered_map<uint32_t, Channel> channels_;
  // key -> its entry in mrs_ (whose nodes do not move): one lookup per SGE.
  std::unordered_map<uint32_t, const MappedMr*> mr_by_key_;
  bool broken_ = false;  // a ring index out of range: end the client
  std::vector<const char*> quotas_logged_;
};

}  // namespace uroced
