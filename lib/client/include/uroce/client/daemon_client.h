// SPDX-License-Identifier: BSD-3-Clause
// uroce through uroced: a process that links this library (and no DPDK)
// uses a port that the daemon owns. Control calls go over the daemon's Unix
// socket; posts and completions go through rings in shared memory
// (docs/daemon.md). The objects follow the in-process API's shape
// (uroce/verbs/*.h) and take its work request types; objects must be
// destroyed before the Connection they came from.
#pragma once

#include <infiniband/verbs.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>
#include <string>
#include <unordered_map>

#include "uroce/verbs/types.h"

namespace uroce::client {

class Connection;
class CompletionQueue;

// ibv_comp_channel: a descriptor that becomes readable when an armed CQ
// of the channel receives a completion.
class CompletionChannel {
 public:
  // Every CQ of the channel must be destroyed first (else the daemon keeps
  // the channel until the connection ends).
  ~CompletionChannel();
  CompletionChannel(const CompletionChannel&) = delete;
  CompletionChannel& operator=(const CompletionChannel&) = delete;
  // Blocking unless set O_NONBLOCK; for poll/epoll.
  int fd() const { return fd_; }
  // ibv_get_cq_event: 0 with the CQ whose event it is, EAGAIN (O_NONBLOCK,
  // none waiting), EINTR, or EPIPE once the daemon is gone.
  int get_event(CompletionQueue*& cq);

 private:
  friend class Connection;
  CompletionChannel() = default;
  Connection* conn_ = nullptr;
  uint32_t handle_ = 0;
  int fd_ = -1;
};

class MemoryRegion {
 public:
  ~MemoryRegion();
  MemoryRegion(const MemoryRegion&) = delete;
  MemoryRegion& operator=(const MemoryRegion&) = delete;
  void* addr() const { return addr_; }
  // The address work requests and peers name addr by: addr itself unless
  // registered with ProtectionDomain::reg_mr_iova.
  uint64_t iova() const { return iova_; }
  size_t length() const { return length_; }
  uint32_t lkey() const { return key_; }
  uint32_t rkey() const { return key_; }

 private:
  friend class ProtectionDomain;
  MemoryRegion() = default;
  Connection* conn_ = nullptr;
  uint32_t handle_ = 0;
  uint32_t key_ = 0;
  void* addr_ = nullptr;
  uint64_t iova_ = 0;
  size_t length_ = 0;
  // alloc_mr: the daemon's memory, mapped here.
  void* map_ = nullptr;
  size_t map_len_ = 0;
  // reg_mr: the shared ranges its pages are in (private again with their
  // last registration).
  std::vector<uintptr_t> ranges_;
  bool client_memory_ = false;
};

class CompletionQueue {
 public:
  ~CompletionQueue();
  CompletionQueue(const CompletionQueue&) = delete;
  CompletionQueue& operator=(const CompletionQueue&) = delete;
  // Up to n completions, oldest first. Once the daemon is gone: 0, and
  // Connection::dead() is true.
  int poll(int n, ibv_wc* wc);
  uint32_t capacity() const { return entries_; }
  // ibv_req_notify_cq: the next completion the daemon moves into this CQ
  // puts one event on its channel (solicited_only is taken as the next
  // completion too). EINVAL without a channel.
  int req_notify(bool solicited_only);
  // ibv_ack_cq_events: nothing to release here.
  void ack_events(unsigned) {}
  CompletionChannel* channel() const { return channel_; }
  // Completions waiting in the ring.
  uint32_t size() const;
  void* context = nullptr;  // the application's (ibv_cq's cq_context)

 private:
  friend class Connection;
  friend class ProtectionDomain;
  CompletionQueue() = default;
  Connection* conn_ = nullptr;
  CompletionChannel* channel_ = nullptr;
  uint32_t handle_ = 0;
  uint32_t entries_ = 0;
  void* ring_ = nullptr;
  uint32_t consumer_ = 0;
  uint32_t empty_polls_ = 0;
};

// ibv_srq: receive WQEs that the QPs created on it take, in posting order.
class SharedReceiveQueue {
 public:
  // Every QP created on it must be destroyed first (EBUSY in the daemon,
  // which then keeps it until the connection ends).
  ~SharedReceiveQueue();
  SharedReceiveQueue(const SharedReceiveQueue&) = delete;
  SharedReceiveQueue& operator=(const SharedReceiveQueue&) = delete;

  // ibv_post_srq_recv: 0, or an errno with *bad at the first WR not posted:
  // EINVAL (SGE count), ENOMEM (ring full), EIO (the daemon is gone). A WR
  // the daemon refuses (an lkey not of this PD, a range outside its region)
  // ends the SRQ: IBV_EVENT_SRQ_ERR, and it takes no more WQEs.
  int post_recv(const RecvWr* wr, const RecvWr** bad);
  // ibv_modify_srq with IBV_SRQ_LIMIT (the only attribute that changes).
  int modify(const ibv_srq_attr& attr, int attr_mask);
  // ibv_query_srq: max_wr, max_sge and the armed limit (0 once it fired).
  int query(ibv_srq_attr& attr);
  uint32_t max_wr() const { return max_wr_; }
  uint32_t max_sge() const { return max_sge_; }
  uint32_t handle() const { return handle_; }
  void* context = nullptr;  // the application's (ibv_srq's srq_context)

 private:
  friend class ProtectionDomain;
  SharedReceiveQueue() = default;
  Connection* conn_ = nullptr;
  uint32_t handle_ = 0;
  void* ring_ = nullptr;
  uint32_t entries_ = 0, producer_ = 0;
  uint32_t max_wr_ = 0, max_sge_ = 0;
};

struct QpInitAttr {
  CompletionQueue* send_cq = nullptr;
  CompletionQueue* recv_cq = nullptr;
  SharedReceiveQueue* srq = nullptr;  // its receives from there (post_recv is then EINVAL)
  ibv_qp_cap cap{};  // max_send_sge, max_recv_sge up to 4, max_inline_data up to 256
  ibv_qp_type qp_type = IBV_QPT_RC;  // RC, UC or UD
  int sq_sig_all = 0;
};

class QueuePair {
 public:
  ~QueuePair();
  QueuePair(const QueuePair&) = delete;
  QueuePair& operator=(const QueuePair&) = delete;
  int modify(const ibv_qp_attr& attr, int attr_mask);
  int query(ibv_qp_attr& attr);
  // 0, or an errno with *bad at the first WR not posted: EINVAL (state,
  // opcode: READ and atomics on UC, only SENDs on UD, SGE count, inline
  // size, a UD WR without an address handle the daemon made), ENOMEM (ring full), EIO (the daemon
  // is gone). A WR the daemon refuses (an lkey not of this PD, a range
  // outside its region) completes with an error and the QP goes to error.
  int post_send(const SendWr* wr, const SendWr** bad);
  // post_send, all or nothing: every WR of the chain, or none and *bad is
  // the first WR refused.
  int post_send_all(const SendWr* wr, const SendWr** bad);
  int post_recv(const RecvWr* wr, const RecvWr** bad);
  uint32_t qp_num() const { return qpn_; }
  ibv_qp_state state() const { return state_; }
  // The daemon's name for it (the connection manager's calls name it).
  uint32_t handle() const { return handle_; }
  void* context = nullptr;  // the application's (ibv_qp's qp_context)

 private:
  friend class ProtectionDomain;
  QueuePair() = default;
  void doorbell();
  // What post_send refuses a WR for, ring room aside: 0 or an errno.
  int check_send(const SendWr& wr) const;
  // A UD WR's address handle as the daemon names it; 0 if it has none.
  uint32_t ah_handle(const SendWr& wr) const;
  // The daemon may have moved the QP on (its connection manager brings
  // QPs to RTS): before a post is refused for the state, the state is
  // asked for again.
  void refresh_state(ibv_qp_state below);
  Connection* conn_ = nullptr;
  uint32_t handle_ = 0, qpn_ = 0;
  ibv_qp_state state_ = IBV_QPS_RESET;
  void* sq_ = nullptr;
  void* rq_ = nullptr;
  uint32_t sq_entries_ = 0, rq_entries_ = 0;
  uint32_t sq_producer_ = 0, rq_producer_ = 0;
  uint32_t max_send_sge_ = 0, max_recv_sge_ = 0, max_inline_ = 0;
  uint32_t ud_max_msg_ = 0;  // UD: the path MTU's bytes, once known (0: not yet)
  bool has_srq_ = false;
  ibv_qp_type type_ = IBV_QPT_RC;
};

// ibv_async_event: a QP's or CQ's event from the daemon's engine, or
// IBV_EVENT_DEVICE_FATAL (both pointers null) once the daemon is gone.
struct AsyncEvent {
  ibv_event_type event_type = IBV_EVENT_DEVICE_FATAL;
  QueuePair* qp = nullptr;
  CompletionQueue* cq = nullptr;
  SharedReceiveQueue* srq = nullptr;
};

class ProtectionDomain {
 public:
  ~ProtectionDomain();
  ProtectionDomain(const ProtectionDomain&) = delete;
  ProtectionDomain& operator=(const ProtectionDomain&) = delete;
  // Memory from the daemon (a shared memfd), zeroed, mapped at the address
  // the daemon has it at; EEXIST if that address is taken here.
  std::unique_ptr<MemoryRegion> alloc_mr(size_t length, int access, int& err);
  // The application's own private memory (malloc, mmap, a program's data
  // and bss): the pages around it are moved into a sealed memfd shared
  // with the daemon, which keeps these addresses as the region's; a range
  // within pages another registration shares already shares that memfd
  // again. EINVAL for other memory (shared files, hugepages, the stack, a
  // range that straddles shared and unshared pages). Other data in those
  // pages must not be written by other threads meanwhile (docs/daemon.md).
  std::unique_ptr<MemoryRegion> reg_mr(void* addr, size_t length, int access, int& err);
  // ibv_reg_mr_iova2: as reg_mr, the region named by iova in work requests
  // and by peers (EINVAL when iova + length wraps).
  std::unique_ptr<MemoryRegion> reg_mr_iova(void* addr, size_t length, uint64_t iova, int access, int& err);
  // EBUSY (mr kept) while posted work or frames in flight use it.
  int dereg_mr(std::unique_ptr<MemoryRegion>& mr);
  std::unique_ptr<QueuePair> create_qp(const QpInitAttr& attr, int& err);
  // ibv_create_srq: max_wr WQEs of up to max_sge SGEs (4), the limit armed
  // when srq_limit is not 0.
  std::unique_ptr<SharedReceiveQueue> create_srq(uint32_t max_wr, uint32_t max_sge, uint32_t srq_limit, int& err);
  // ibv_create_ah in the daemon: 0 and the handle a UD send names
  // (uroce::AddressHandle::remote_handle), or an errno: EINVAL (no global
  // route, a GID index or address family the port has not), EHOSTUNREACH
  // (the MAC is not known yet: the daemon starts resolving it), ENOMEM.
  int create_ah(const ibv_ah_attr& attr, uint32_t& handle);
  // 0, EINVAL for a handle that is not this client's; 0 once the daemon
  // is gone (it took every handle with the connection).
  int destroy_ah(uint32_t handle);
  // ibv_alloc_mw in the daemon: 0 with its handle and rkey (whose upper 24
  // bits name it in binds), EINVAL (a type other than 1 and 2), ENOMEM.
  int alloc_mw(ibv_mw_type type, uint32_t& handle, uint32_t& rkey);
  // 0, EINVAL for a handle that is not this client's; 0 once the daemon
  // is gone.
  int dealloc_mw(uint32_t handle);
  uint32_t handle() const { return handle_; }

 private:
  friend class Connection;
  ProtectionDomain() = default;
  Connection* conn_ = nullptr;
  uint32_t handle_ = 0;
};

class Connection {
 public:
  // Connects to uroced at `socket` (empty: /run/uroce/uroced.sock).
  // nullptr with a message on failure.
  static std::unique_ptr<Connection> connect(const std::string& socket, std::string& error);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  std::unique_ptr<ProtectionDomain> alloc_pd(int& err);
  std::unique_ptr<CompletionQueue> create_cq(int cqe, int& err);
  std::unique_ptr<CompletionQueue> create_cq(int cqe, CompletionChannel* channel, int& err);
  std::unique_ptr<CompletionChannel> create_comp_channel(int& err);

  const std::string& device_name() const { return name_; }
  // The port's RoCE address (GID 1) as 16 bytes (IPv4-mapped for IPv4).
  const uint8_t* gid() const { return gid_; }
  const uint8_t* link_local_gid() const { return link_local_gid_; }
  uint32_t client_id() const { return client_id_; }
  // The port's MAC (6 bytes) and Ethernet MTU (largest IP datagram).
  const uint8_t* mac() const { return mac_; }
  uint16_t mtu() const { return mtu_; }
  // Readable while an event waits (and once the daemon is gone); blocking
  // unless set O_NONBLOCK.
  int async_event_fd() const { return events_; }
  // ibv_get_async_event: 0 with the event; EAGAIN (O_NONBLOCK or !wait,
  // none waiting), EINTR; after the one IBV_EVENT_DEVICE_FATAL, ENODEV.
  // Events of objects destroyed meanwhile are skipped; with !wait it never
  // blocks, also when what it skipped was all there was.
  int get_async_event(AsyncEvent& ev, bool wait = true);
  // The daemon is gone: posts fail with EIO, destroys succeed locally.
  bool dead() const { return dead_.load(std::memory_order_relaxed); }
  // Looks at the socket without blocking; true if the daemon is gone.
  bool check_dead();

  // The daemon's neighbour table (ARP/ND on its port): `start` begins
  // resolving `ip` (16 bytes, IPv4-mapped) unless its MAC is known. The
  // state is a uroce::NeighborState; `mac` is set when it is reachable.
  int neighbor(const uint8_t* ip, bool start, uint32_t& state, uint8_t* mac);

  // One request, one reply (with at most one descriptor each way); the
  // reply's status, or EPIPE once the daemon is gone. Internal.
  int call(const void* req, size_t req_len, void* rep, size_t rep_len, int send_fd = -1, int* recv_fd = nullptr);
  int call(const void* req, size_t req_len, void* rep, size_t rep_len, const int* send_fds, int nsend,
           int* recv_fd = nullptr);
  uint8_t* arena() const { return arena_; }
  // A UD send names its destination by a uroce::AddressHandle, which the
  // verbs layer above this one made in the daemon: it tells this layer how
  // to read the daemon's handle out of one (an address handle is not this
  // layer's object). Until it does, UD sends are EINVAL.
  using AhHandleOf = uint32_t (*)(const AddressHandle* ah);
  void set_ah_handle_of(AhHandleOf f) { ah_handle_of_ = f; }
  AhHandleOf ah_handle_of() const { return ah_handle_of_; }
  // The same for a window bind: the window's new rkey (its handle and the
  // WR's low 8 bits) and the region's lkey (0: none). Until it is told,
  // binds are EINVAL.
  using BindKeysOf = void (*)(const SendWr& wr, uint32_t& window, uint32_t& region);
  void set_bind_keys_of(BindKeysOf f) { bind_keys_of_ = f; }
  BindKeysOf bind_keys_of() const { return bind_keys_of_; }
  // Memory windows this client may hold (the daemon's max_mw).
  uint32_t max_mw() const { return max_mw_; }
  void ring_doorbell();
  CompletionQueue* cq_by_handle(uint32_t handle);
  void forget_cq(uint32_t handle);
  void remember_qp(uint32_t handle, QueuePair* qp);
  void forget_qp(uint32_t handle);
  void remember_srq(uint32_t handle, SharedReceiveQueue* srq);
  void forget_srq(uint32_t handle);

 private:
  Connection() = default;
  int sock_ = -1;
  int doorbell_ = -1;
  AhHandleOf ah_handle_of_ = nullptr;
  BindKeysOf bind_keys_of_ = nullptr;
  uint32_t max_mw_ = 0;
  uint8_t* arena_ = nullptr;
  size_t arena_bytes_ = 0;
  std::mutex mutex_;  // one control call at a time
  std::mutex cq_mutex_;
  std::unordered_map<uint32_t, CompletionQueue*> cqs_;  // for the channels' and async events
  std::unordered_map<uint32_t, QueuePair*> qps_;        // for async events
  std::unordered_map<uint32_t, SharedReceiveQueue*> srqs_;
  int events_ = -1;
  bool fatal_reported_ = false;
  std::atomic<bool> dead_{false};
  std::string name_;
  uint8_t gid_[16]{};
  uint8_t link_local_gid_[16]{};
  uint32_t client_id_ = 0;
  uint8_t mac_[6]{};
  uint16_t mtu_ = 0;
};

}  // namespace uroce::client
