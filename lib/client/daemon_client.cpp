// SPDX-License-Identifier: BSD-3-Clause
#include "uroce/client/daemon_client.h"

#include <poll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <sched.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "daemon/protocol.h"
#include "daemon/socket_io.h"
#include "shared_pages.h"

namespace uroce::client {

using namespace uroce::daemon;

namespace {

// Empty polls between looks at the socket for a daemon that is gone.
constexpr uint32_t kDeadCheckEvery = 1u << 14;

uint64_t page_size() { return uint64_t(sysconf(_SC_PAGESIZE)); }

RingHeader* ring_at(uint8_t* arena, uint64_t offset) { return reinterpret_cast<RingHeader*>(arena + offset); }

void destroy(Connection* conn, Op op, uint32_t handle, uint32_t flags = 0) {
  if (conn == nullptr || conn->dead()) return;
  auto req = make_message<HandleReq>(op);
  req.handle = handle;
  req.flags = flags;
  HandleRep rep{};
  conn->call(&req, sizeof req, &rep, sizeof rep);
}

// Receive WRs into a ring of receive slots (a QP's or an SRQ's), then
// one doorbell: 0, or an errno with *bad at the first WR not posted.
int push_recvs(Connection& conn, RingHeader* ring, uint32_t& producer, uint32_t entries, uint32_t max_sge,
               const RecvWr* wr, const RecvWr** bad) {
  RecvSlot* slots = ring_slots<RecvSlot>(ring);
  const uint32_t start = producer;
  int err = 0;
  for (; wr != nullptr; wr = wr->next) {
    if (conn.dead()) err = EIO;
    else if (wr->num_sge < 0 || uint32_t(wr->num_sge) > max_sge) err = EINVAL;
    else if (producer - ring->consumer.value.load(std::memory_order_acquire) >= entries) err = ENOMEM;
    if (err != 0) break;
    RecvSlot& s = slots[producer & (entries - 1)];
    s.wr_id = wr->wr_id;
    s.num_sge = uint32_t(wr->num_sge);
    if (wr->num_sge > 0) std::memcpy(s.sge, wr->sg_list, sizeof(ibv_sge) * size_t(wr->num_sge));
    ++producer;
  }
  if (producer != start) {
    ring->producer.value.store(producer, std::memory_order_release);
    conn.ring_doorbell();
  }
  if (err != 0 && bad != nullptr) *bad = wr;
  return err;
}

// Until the daemon has taken the ring's slots up to `producer` (it hands
// them to its engine in order), at most a while: a daemon that leaves them
// (a refusal waiting for CQ room the application does not make) must not
// hang the post.
void wait_taken(Connection& conn, const RingHeader* ring, uint32_t producer) {
  constexpr auto kPatience = std::chrono::milliseconds(100);
  const auto until = std::chrono::steady_clock::now() + kPatience;
  for (unsigned spins = 1; int32_t(producer - ring->consumer.value.load(std::memory_order_acquire)) > 0; ++spins) {
    if (conn.dead()) return;
    if (spins % 64 == 0) {
      if (std::chrono::steady_clock::now() > until) return;
      sched_yield();
    }
  }
}

}  // namespace

// ---- connection ----

std::unique_ptr<Connection> Connection::connect(const std::string& socket_path, std::string& error) {
  const std::string path = socket_path.empty() ? kDefaultSocket : socket_path;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof addr.sun_path) return error = "socket path too long: " + path, nullptr;
  std::memcpy(addr.sun_path, path.c_str(), path.size());
  std::unique_ptr<Connection> c(new Connection());
  c->sock_ = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  if (c->sock_ < 0 || ::connect(c->sock_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0)
    return error = "cannot connect to uroced at " + path + ": " + std::strerror(errno), nullptr;
  auto req = make_message<HelloReq>(Op::hello);
  req.magic = kMagic;
  req.version = kVersion;
  HelloRep rep{};
  if (send_datagram(c->sock_, &req, sizeof req, nullptr, 0) != 0)
    return error = "uroced at " + path + ": " + std::strerror(errno), nullptr;
  Received r = recv_datagram(c->sock_, &rep, sizeof rep);
  if (r.len != ssize_t(sizeof rep) || rep.h.op != Op::hello) {
    close_fds(r);
    return error = "uroced at " + path + ": no valid answer to HELLO", nullptr;
  }
  if (rep.h.status != 0 || r.nfds != 3) {
    close_fds(r);
    return error = "uroced at " + path + " refused the client: " + std::strerror(rep.h.status ? rep.h.status : EPROTO),
           nullptr;
  }
  c->doorbell_ = r.fds[1];
  c->events_ = r.fds[2];
  void* arena = mmap(nullptr, rep.arena_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, r.fds[0], 0);
  close(r.fds[0]);
  if (arena == MAP_FAILED) return error = std::string("cannot map the arena: ") + std::strerror(errno), nullptr;
  // A child after fork has no business with the rings.
  madvise(arena, rep.arena_bytes, MADV_DONTFORK);
  c->arena_ = static_cast<uint8_t*>(arena);
  c->arena_bytes_ = rep.arena_bytes;
  const auto& h = *reinterpret_cast<const ArenaHeader*>(arena);
  if (h.magic != kMagic || h.version != kVersion) return error = "uroced's arena has another layout", nullptr;
  c->name_.assign(rep.device_name, strnlen(rep.device_name, sizeof rep.device_name));
  std::memcpy(c->gid_, rep.gid, 16);
  std::memcpy(c->link_local_gid_, rep.link_local_gid, 16);
  c->client_id_ = rep.client_id;
  std::memcpy(c->mac_, rep.mac, 6);
  c->mtu_ = rep.mtu;
  c->max_mw_ = rep.max_mw;
  return c;
}

Connection::~Connection() {
  if (events_ >= 0) close(events_);
  if (arena_ != nullptr) munmap(arena_, arena_bytes_);
  if (doorbell_ >= 0) close(doorbell_);
  if (sock_ >= 0) close(sock_);
}

int Connection::call(const void* req, size_t req_len, void* rep, size_t rep_len, int send_fd, int* recv_fd) {
  return call(req, req_len, rep, rep_len, send_fd >= 0 ? &send_fd : nullptr, send_fd >= 0 ? 1 : 0, recv_fd);
}

int Connection::call(const void* req, size_t req_len, void* rep, size_t rep_len, const int* send_fds, int nsend,
                     int* recv_fd) {
  std::lock_guard lock(mutex_);
  if (dead()) return EPIPE;
  if (send_datagram(sock_, req, req_len, send_fds, nsend) != 0) {
    dead_ = true;
    return EPIPE;
  }
  Received r = recv_datagram(sock_, rep, rep_len);
  const auto* h = static_cast<const RepHeader*>(rep);
  if (r.len <= 0 || size_t(r.len) < sizeof(RepHeader)) {
    close_fds(r);
    dead_ = true;
    return EPIPE;
  }
  if (recv_fd != nullptr && r.nfds == 1) {
    *recv_fd = r.fds[0];
    r.nfds = 0;
  }
  close_fds(r);
  if (h->status != 0) return h->status;
  return size_t(r.len) == rep_len ? 0 : EPROTO;
}

bool Connection::check_dead() {
  if (dead()) return true;
  std::unique_lock lock(mutex_, std::try_to_lock);
  if (!lock.owns_lock()) return false;  // a control call is under way: it will tell
  char c;
  const ssize_t n = recv(sock_, &c, 1, MSG_PEEK | MSG_DONTWAIT);
  if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) dead_ = true;
  return dead();
}

void Connection::ring_doorbell() {
  std::atomic_thread_fence(std::memory_order_seq_cst);
  auto& h = *reinterpret_cast<ArenaHeader*>(arena_);
  if (h.need_wakeup.load(std::memory_order_relaxed) == 0) return;
  const uint64_t one = 1;
  (void)!write(doorbell_, &one, sizeof one);
}

std::unique_ptr<ProtectionDomain> Connection::alloc_pd(int& err) {
  auto req = make_message<AllocPdReq>(Op::alloc_pd);
  HandleRep rep{};
  err = call(&req, sizeof req, &rep, sizeof rep);
  if (err != 0) return nullptr;
  std::unique_ptr<ProtectionDomain> pd(new ProtectionDomain());
  pd->conn_ = this;
  pd->handle_ = rep.handle;
  return pd;
}

std::unique_ptr<CompletionQueue> Connection::create_cq(int cqe, int& err) { return create_cq(cqe, nullptr, err); }

std::unique_ptr<CompletionChannel> Connection::create_comp_channel(int& err) {
  auto req = make_message<AllocPdReq>(Op::create_comp_channel);
  HandleRep rep{};
  int fd = -1;
  err = call(&req, sizeof req, &rep, sizeof rep, -1, &fd);
  if (err != 0 || fd < 0) {
    if (fd >= 0) close(fd);
    return err = err ? err : EPROTO, nullptr;
  }
  std::unique_ptr<CompletionChannel> ch(new CompletionChannel());
  ch->conn_ = this;
  ch->handle_ = rep.handle;
  ch->fd_ = fd;
  return ch;
}

CompletionQueue* Connection::cq_by_handle(uint32_t handle) {
  std::lock_guard lock(cq_mutex_);
  auto it = cqs_.find(handle);
  return it == cqs_.end() ? nullptr : it->second;
}

void Connection::forget_cq(uint32_t handle) {
  std::lock_guard lock(cq_mutex_);
  cqs_.erase(handle);
}

void Connection::remember_qp(uint32_t handle, QueuePair* qp) {
  std::lock_guard lock(cq_mutex_);
  qps_[handle] = qp;
}

void Connection::forget_qp(uint32_t handle) {
  std::lock_guard lock(cq_mutex_);
  qps_.erase(handle);
}

void Connection::remember_srq(uint32_t handle, SharedReceiveQueue* srq) {
  std::lock_guard lock(cq_mutex_);
  srqs_[handle] = srq;
}

void Connection::forget_srq(uint32_t handle) {
  std::lock_guard lock(cq_mutex_);
  srqs_.erase(handle);
}

int Connection::get_async_event(AsyncEvent& ev, bool wait) {
  for (;;) {
    if (!wait) {
      pollfd p{events_, POLLIN, 0};
      if (::poll(&p, 1, 0) != 1) return EAGAIN;
    }
    AsyncRecord rec{};
    const ssize_t n = read(events_, &rec, sizeof rec);
    if (n < 0) return errno;
    if (n == 0) {
      // The daemon is gone: one fatal event, then nothing.
      dead_ = true;
      if (fatal_reported_) return ENODEV;
      fatal_reported_ = true;
      ev = AsyncEvent{};
      return 0;
    }
    if (n != ssize_t(sizeof rec)) return EPROTO;
    ev = AsyncEvent{};
    ev.event_type = ibv_event_type(rec.event_type);
    std::lock_guard lock(cq_mutex_);
    if (rec.object == EventObject::qp) {
      auto it = qps_.find(rec.handle);
      if (it == qps_.end()) continue;
      ev.qp = it->second;
    } else if (rec.object == EventObject::cq) {
      auto it = cqs_.find(rec.handle);
      if (it == cqs_.end()) continue;
      ev.cq = it->second;
    } else if (rec.object == EventObject::srq) {
      auto it = srqs_.find(rec.handle);
      if (it == srqs_.end()) continue;
      ev.srq = it->second;
    }
    return 0;
  }
}

CompletionChannel::~CompletionChannel() {
  destroy(conn_, Op::destroy_comp_channel, handle_);
  if (fd_ >= 0) close(fd_);
}

int CompletionChannel::get_event(CompletionQueue*& cq) {
  for (;;) {
    uint32_t handle = 0;
    const ssize_t n = read(fd_, &handle, sizeof handle);
    if (n < 0) return errno;
    if (n == 0) return EPIPE;  // the daemon closed its end
    if (n != ssize_t(sizeof handle)) return EPROTO;
    // A CQ destroyed since its event was written: skip it.
    if ((cq = conn_->cq_by_handle(handle)) != nullptr) return 0;
  }
}

std::unique_ptr<CompletionQueue> Connection::create_cq(int cqe, CompletionChannel* channel, int& err) {
  if (cqe <= 0) return err = EINVAL, nullptr;
  auto req = make_message<CreateCqReq>(Op::create_cq);
  req.cqe = uint32_t(cqe);
  req.channel = channel != nullptr ? channel->handle_ : 0;
  CreateCqRep rep{};
  err = call(&req, sizeof req, &rep, sizeof rep);
  if (err != 0) return nullptr;
  const bool fits = rep.entries != 0 && (rep.entries & (rep.entries - 1)) == 0 &&
                    rep.ring_offset + ring_bytes<CqSlot>(rep.entries) <= arena_bytes_;
  if (!fits) return err = EPROTO, nullptr;
  std::unique_ptr<CompletionQueue> cq(new CompletionQueue());
  cq->conn_ = this;
  cq->handle_ = rep.cq;
  cq->entries_ = rep.entries;
  cq->ring_ = ring_at(arena_, rep.ring_offset);
  cq->channel_ = channel;
  std::lock_guard lock(cq_mutex_);
  cqs_[rep.cq] = cq.get();
  return cq;
}

// ---- completion queue ----

CompletionQueue::~CompletionQueue() {
  conn_->forget_cq(handle_);
  destroy(conn_, Op::destroy_cq, handle_);
}

uint32_t CompletionQueue::size() const {
  const auto* ring = static_cast<const RingHeader*>(ring_);
  return ring->producer.value.load(std::memory_order_acquire) - consumer_;
}

int CompletionQueue::req_notify(bool solicited_only) {
  if (channel_ == nullptr) return EINVAL;
  auto* ring = static_cast<RingHeader*>(ring_);
  ring->notify.value.store(solicited_only ? kNotifySolicited : kNotifyNext, std::memory_order_seq_cst);
  // A daemon asleep is woken by the completion itself (its own CQ events).
  return 0;
}

int CompletionQueue::poll(int n, ibv_wc* wc) {
  auto* ring = static_cast<RingHeader*>(ring_);
  const uint32_t producer = ring->producer.value.load(std::memory_order_acquire);
  uint32_t avail = producer - consumer_;
  if (avail == 0) {
    if (++empty_polls_ % kDeadCheckEvery == 0) conn_->check_dead();
    return 0;
  }
  avail = std::min(avail, std::min(entries_, uint32_t(std::max(n, 0))));
  const CqSlot* slots = ring_slots<CqSlot>(ring);
  for (uint32_t i = 0; i < avail; ++i) wc[i] = slots[(consumer_ + i) & (entries_ - 1)];
  consumer_ += avail;
  ring->consumer.value.store(consumer_, std::memory_order_release);
  return int(avail);
}

// ---- protection domain and regions ----

ProtectionDomain::~ProtectionDomain() { destroy(conn_, Op::dealloc_pd, handle_); }

std::unique_ptr<MemoryRegion> ProtectionDomain::alloc_mr(size_t length, int access, int& err) {
  auto req = make_message<AllocMrReq>(Op::alloc_mr);
  req.pd = handle_;
  req.access = access;
  req.length = length;
  MrRep rep{};
  int fd = -1;
  err = conn_->call(&req, sizeof req, &rep, sizeof rep, -1, &fd);
  if (err != 0 || fd < 0) {
    if (fd >= 0) close(fd);
    return err = err ? err : EPROTO, nullptr;
  }
  std::unique_ptr<MemoryRegion> mr(new MemoryRegion());
  mr->conn_ = conn_;
  mr->handle_ = rep.mr;
  mr->key_ = rep.key;
  mr->length_ = length;
  // The whole memfd: the daemon may have put the region on huge pages,
  // whose mappings are whole huge pages.
  struct stat st {};
  if (fstat(fd, &st) != 0 || uint64_t(st.st_size) < length) {
    close(fd);
    return err = EPROTO, nullptr;  // the destructor deregisters it
  }
  mr->map_len_ = size_t(st.st_size);
  void* want = reinterpret_cast<void*>(rep.addr);
  void* p = mmap(want, mr->map_len_, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED_NOREPLACE, fd, 0);
  close(fd);
  if (p != want) {
    if (p != MAP_FAILED) munmap(p, mr->map_len_);
    return err = EEXIST, nullptr;  // the destructor deregisters it
  }
  mr->addr_ = mr->map_ = p;
  mr->iova_ = reinterpret_cast<uintptr_t>(p);
  pages::track(p, mr->map_len_);
  return mr;
}

std::unique_ptr<MemoryRegion> ProtectionDomain::reg_mr(void* addr, size_t length, int access, int& err) {
  return reg_mr_iova(addr, length, reinterpret_cast<uintptr_t>(addr), access, err);
}

std::unique_ptr<MemoryRegion> ProtectionDomain::reg_mr_iova(void* addr, size_t length, uint64_t iova, int access,
                                                            int& err) {
  const uint64_t page = page_size();
  const uintptr_t a = reinterpret_cast<uintptr_t>(addr);
  if (addr == nullptr || length == 0 || a + length < a || iova + length < iova) return err = EINVAL, nullptr;
  const uintptr_t start = a & ~(page - 1);
  const size_t map_len = ((a + length + page - 1) & ~(page - 1)) - start;
  // One registration at a time: two in one page must not both share it.
  static std::mutex registering;
  std::lock_guard<std::mutex> one_at_a_time(registering);
  // The ranges earlier registrations share, and new ones between them.
  std::vector<pages::Piece> pieces;
  if (!pages::cover(start, map_len, pieces)) return err = errno, nullptr;
  std::vector<uintptr_t> ranges;
  for (const auto& p : pieces) ranges.push_back(p.range);
  if (pieces.size() > kMaxRegSegments) {
    pages::drop(ranges);
    return err = EINVAL, nullptr;
  }
  auto req = make_message<RegMrReq>(Op::reg_mr);
  req.pd = handle_;
  req.access = access;
  req.addr = a;
  req.length = length;
  req.iova = iova;
  req.map_addr = start;
  req.map_length = map_len;
  req.segments = uint32_t(pieces.size());
  int fds[kMaxRegSegments];
  for (size_t i = 0; i < pieces.size(); ++i) {
    req.seg[i] = RegSegment{pieces[i].addr, pieces[i].len, pieces[i].offset};
    fds[i] = pieces[i].fd;
  }
  MrRep rep{};
  err = conn_->call(&req, sizeof req, &rep, sizeof rep, fds, int(pieces.size()));
  if (err != 0) {
    pages::drop(ranges);
    return nullptr;
  }
  std::unique_ptr<MemoryRegion> mr(new MemoryRegion());
  mr->conn_ = conn_;
  mr->handle_ = rep.mr;
  mr->key_ = rep.key;
  mr->addr_ = addr;
  mr->iova_ = iova;
  mr->length_ = length;
  mr->ranges_ = std::move(ranges);
  mr->client_memory_ = true;
  return mr;
}

int ProtectionDomain::dereg_mr(std::unique_ptr<MemoryRegion>& mr) {
  if (!mr) return EINVAL;
  if (!conn_->dead()) {
    auto req = make_message<HandleReq>(Op::dereg_mr);
    req.handle = mr->handle_;
    HandleRep rep{};
    const int err = conn_->call(&req, sizeof req, &rep, sizeof rep);
    if (err != 0 && err != EPIPE) return err;
  }
  mr->conn_ = nullptr;  // deregistered: the destructor only unmaps
  mr.reset();
  return 0;
}

MemoryRegion::~MemoryRegion() {
  destroy(conn_, Op::dereg_mr, handle_, kDeregUnbind);
  // The application's memory stays where it was, private again once no
  // registration shares it; memory from the daemon goes.
  if (client_memory_) {
    pages::drop(ranges_);
  } else if (map_ != nullptr) {
    pages::untrack(map_);
    munmap(map_, map_len_);
  }
}

// ---- queue pair ----

std::unique_ptr<QueuePair> ProtectionDomain::create_qp(const QpInitAttr& attr, int& err) {
  const bool type_ok = attr.qp_type == IBV_QPT_RC || attr.qp_type == IBV_QPT_UC || attr.qp_type == IBV_QPT_UD;
  if (attr.send_cq == nullptr || attr.recv_cq == nullptr || !type_ok) return err = EINVAL, nullptr;
  if (attr.srq != nullptr && attr.srq->conn_ != conn_) return err = EINVAL, nullptr;
  auto req = make_message<CreateQpReq>(Op::create_qp);
  req.pd = handle_;
  req.send_cq = attr.send_cq->handle_;
  req.recv_cq = attr.recv_cq->handle_;
  req.qp_type = attr.qp_type;
  req.max_send_wr = attr.cap.max_send_wr;
  req.max_recv_wr = attr.cap.max_recv_wr;
  req.max_send_sge = attr.cap.max_send_sge;
  req.max_recv_sge = attr.cap.max_recv_sge;
  req.max_inline_data = attr.cap.max_inline_data;
  req.sq_sig_all = uint32_t(attr.sq_sig_all);
  req.srq = attr.srq != nullptr ? attr.srq->handle_ : 0;
  CreateQpRep rep{};
  err = conn_->call(&req, sizeof req, &rep, sizeof rep);
  if (err != 0) return nullptr;
  std::unique_ptr<QueuePair> qp(new QueuePair());
  qp->conn_ = conn_;
  qp->handle_ = rep.qp;
  qp->qpn_ = rep.qpn;
  qp->sq_ = ring_at(conn_->arena(), rep.sq_offset);
  qp->rq_ = ring_at(conn_->arena(), rep.rq_offset);
  qp->sq_entries_ = rep.sq_entries;
  qp->rq_entries_ = rep.rq_entries;
  qp->max_send_sge_ = rep.max_send_sge;
  qp->max_recv_sge_ = rep.max_recv_sge;
  qp->max_inline_ = rep.max_inline_data;
  qp->has_srq_ = attr.srq != nullptr;
  qp->type_ = attr.qp_type;
  conn_->remember_qp(rep.qp, qp.get());
  return qp;
}

// ---- address handle ----

int ProtectionDomain::create_ah(const ibv_ah_attr& attr, uint32_t& handle) {
  auto req = make_message<CreateAhReq>(Op::create_ah);
  req.pd = handle_;
  req.attr = attr;
  HandleRep rep{};
  const int err = conn_->call(&req, sizeof req, &rep, sizeof rep);
  if (err == 0) handle = rep.handle;
  return err;
}

int ProtectionDomain::destroy_ah(uint32_t handle) {
  if (conn_->dead()) return 0;  // the daemon took it with the connection
  auto req = make_message<HandleReq>(Op::destroy_ah);
  req.handle = handle;
  HandleRep rep{};
  return conn_->call(&req, sizeof req, &rep, sizeof rep);
}

// ---- memory window ----

int ProtectionDomain::alloc_mw(ibv_mw_type type, uint32_t& handle, uint32_t& rkey) {
  auto req = make_message<AllocMwReq>(Op::alloc_mw);
  req.pd = handle_;
  req.type = type;
  MwRep rep{};
  const int err = conn_->call(&req, sizeof req, &rep, sizeof rep);
  if (err == 0) handle = rep.mw, rkey = rep.rkey;
  return err;
}

int ProtectionDomain::dealloc_mw(uint32_t handle) {
  if (conn_->dead()) return 0;  // the daemon took it with the connection
  auto req = make_message<HandleReq>(Op::dealloc_mw);
  req.handle = handle;
  HandleRep rep{};
  return conn_->call(&req, sizeof req, &rep, sizeof rep);
}

// ---- shared receive queue ----

std::unique_ptr<SharedReceiveQueue> ProtectionDomain::create_srq(uint32_t max_wr, uint32_t max_sge, uint32_t srq_limit,
                                                                 int& err) {
  auto req = make_message<CreateSrqReq>(Op::create_srq);
  req.pd = handle_;
  req.max_wr = max_wr;
  req.max_sge = max_sge;
  req.srq_limit = srq_limit;
  CreateSrqRep rep{};
  err = conn_->call(&req, sizeof req, &rep, sizeof rep);
  if (err != 0) return nullptr;
  std::unique_ptr<SharedReceiveQueue> q(new SharedReceiveQueue());
  q->conn_ = conn_;
  q->handle_ = rep.srq;
  q->ring_ = ring_at(conn_->arena(), rep.ring_offset);
  q->entries_ = rep.entries;
  q->max_wr_ = rep.max_wr;
  q->max_sge_ = rep.max_sge;
  conn_->remember_srq(rep.srq, q.get());
  return q;
}

SharedReceiveQueue::~SharedReceiveQueue() {
  conn_->forget_srq(handle_);
  destroy(conn_, Op::destroy_srq, handle_);
}

int SharedReceiveQueue::post_recv(const RecvWr* wr, const RecvWr** bad) {
  return push_recvs(*conn_, static_cast<RingHeader*>(ring_), producer_, entries_, max_sge_, wr, bad);
}

int SharedReceiveQueue::modify(const ibv_srq_attr& attr, int attr_mask) {
  if (attr_mask != IBV_SRQ_LIMIT) return EINVAL;
  auto req = make_message<ModifySrqReq>(Op::modify_srq);
  req.srq = handle_;
  req.attr_mask = attr_mask;
  req.srq_limit = attr.srq_limit;
  HandleRep rep{};
  return conn_->call(&req, sizeof req, &rep, sizeof rep);
}

int SharedReceiveQueue::query(ibv_srq_attr& attr) {
  auto req = make_message<HandleReq>(Op::query_srq);
  req.handle = handle_;
  QuerySrqRep rep{};
  const int err = conn_->call(&req, sizeof req, &rep, sizeof rep);
  if (err == 0) {
    attr.max_wr = rep.max_wr;
    attr.max_sge = rep.max_sge;
    attr.srq_limit = rep.srq_limit;
  }
  return err;
}

QueuePair::~QueuePair() {
  conn_->forget_qp(handle_);
  destroy(conn_, Op::destroy_qp, handle_);
}

int QueuePair::modify(const ibv_qp_attr& attr, int attr_mask) {
  auto req = make_message<ModifyQpReq>(Op::modify_qp);
  req.qp = handle_;
  req.attr_mask = attr_mask;
  req.attr = attr;
  HandleRep rep{};
  const int err = conn_->call(&req, sizeof req, &rep, sizeof rep);
  if (err == 0 && (attr_mask & IBV_QP_STATE)) state_ = attr.qp_state;
  // A UD QP's path MTU is the port's, set by the daemon at RTR (before it,
  // the QP holds a default): read it back then.
  if (state_ == IBV_QPS_RESET) ud_max_msg_ = 0;
  if (err == 0 && type_ == IBV_QPT_UD && ud_max_msg_ == 0 && state_ >= IBV_QPS_RTR && state_ != IBV_QPS_ERR) {
    ibv_qp_attr now{};
    query(now);
  }
  return err;
}

int QueuePair::query(ibv_qp_attr& attr) {
  auto req = make_message<HandleReq>(Op::query_qp);
  req.handle = handle_;
  QueryQpRep rep{};
  const int err = conn_->call(&req, sizeof req, &rep, sizeof rep);
  if (err == 0) {
    attr = rep.attr;
    state_ = attr.qp_state;
    const bool past_rtr = state_ >= IBV_QPS_RTR && state_ != IBV_QPS_ERR;
    if (type_ == IBV_QPT_UD) ud_max_msg_ = past_rtr && attr.path_mtu != 0 ? 128u << attr.path_mtu : 0;
  }
  return err;
}

int Connection::neighbor(const uint8_t* ip, bool start, uint32_t& state, uint8_t* mac) {
  auto req = make_message<NeighborReq>(Op::neighbor);
  std::memcpy(req.ip, ip, 16);
  req.start = start ? 1 : 0;
  NeighborRep rep{};
  const int err = call(&req, sizeof req, &rep, sizeof rep);
  if (err == 0) {
    state = rep.state;
    if (rep.reachable) std::memcpy(mac, rep.mac, 6);
  }
  return err;
}

void QueuePair::refresh_state(ibv_qp_state below) {
  if (state_ >= below || state_ == IBV_QPS_ERR || conn_->dead()) return;
  ibv_qp_attr attr{};
  query(attr);
}

int QueuePair::check_send(const SendWr& wr) const {
  if (conn_->dead()) return EIO;
  if (state_ == IBV_QPS_RESET || state_ == IBV_QPS_INIT || state_ == IBV_QPS_RTR) return EINVAL;
  // UC has no READ and no atomics, UD only SENDs to an address handle of
  // the daemon's (the in-process QP refuses the same).
  const bool send = wr.opcode == IBV_WR_SEND || wr.opcode == IBV_WR_SEND_WITH_IMM;
  const bool local = wr.opcode == IBV_WR_BIND_MW || wr.opcode == IBV_WR_LOCAL_INV;
  if (type_ == IBV_QPT_UC && !send && !local && wr.opcode != IBV_WR_RDMA_WRITE &&
      wr.opcode != IBV_WR_RDMA_WRITE_WITH_IMM)
    return EINVAL;
  if (type_ == IBV_QPT_UD && (!send || ah_handle(wr) == 0)) return EINVAL;
  if (wr.opcode == IBV_WR_BIND_MW) {
    // As in process: a window, and a region for a range; the daemon checks
    // that both are this client's, the engine the rest when it runs.
    const auto& b = wr.bind_mw;
    const bool range = b.bind_info.addr != 0 || b.bind_info.length != 0;
    return b.mw == nullptr || (b.bind_info.mr == nullptr && range) || conn_->bind_keys_of() == nullptr ? EINVAL : 0;
  }
  if (local) return 0;  // sends nothing: no SGEs
  if (wr.num_sge < 0 || uint32_t(wr.num_sge) > max_send_sge_) return EINVAL;
  const bool inline_data = wr.send_flags & IBV_SEND_INLINE;
  const bool datagram = type_ == IBV_QPT_UD && ud_max_msg_ != 0;
  if (!inline_data && !datagram) return 0;  // the common post sums nothing
  uint64_t total = 0;  // 32-bit lengths that wrap must not pass the checks
  for (int i = 0; i < wr.num_sge; ++i) total += wr.sg_list[i].length;
  if (inline_data && total > max_inline_) return EINVAL;
  // A datagram is one packet: past the path MTU it is refused here, as the
  // in-process QP does, not failed in the daemon.
  if (datagram && total > ud_max_msg_) return EINVAL;
  return 0;
}

uint32_t QueuePair::ah_handle(const SendWr& wr) const {
  const Connection::AhHandleOf of = conn_->ah_handle_of();
  return wr.wr.ud.ah != nullptr && of != nullptr ? of(wr.wr.ud.ah) : 0;
}

int QueuePair::post_send_all(const SendWr* wr, const SendWr** bad) {
  refresh_state(IBV_QPS_RTS);
  uint32_t n = 0;
  for (const SendWr* w = wr; w != nullptr; w = w->next, ++n) {
    if (const int err = check_send(*w)) {
      if (bad != nullptr) *bad = w;
      return err;
    }
  }
  // Room only grows between this check and the post (the daemon consumes,
  // this thread alone produces): the post then takes every WR.
  const auto* ring = static_cast<const RingHeader*>(sq_);
  if (sq_entries_ - (sq_producer_ - ring->consumer.value.load(std::memory_order_acquire)) < n) {
    if (bad != nullptr) *bad = wr;
    return ENOMEM;
  }
  return post_send(wr, bad);
}

int QueuePair::post_send(const SendWr* wr, const SendWr** bad) {
  refresh_state(IBV_QPS_RTS);
  auto* ring = static_cast<RingHeader*>(sq_);
  SendSlot* slots = ring_slots<SendSlot>(ring);
  const uint32_t start = sq_producer_;
  int err = 0;
  for (; wr != nullptr; wr = wr->next) {
    err = check_send(*wr);
    if (err == 0 && sq_producer_ - ring->consumer.value.load(std::memory_order_acquire) >= sq_entries_) err = ENOMEM;
    if (err != 0) break;
    SendSlot& s = slots[sq_producer_ & (sq_entries_ - 1)];
    s.wr_id = wr->wr_id;
    s.opcode = wr->opcode;
    s.send_flags = wr->send_flags;
    const bool local = wr->opcode == IBV_WR_BIND_MW || wr->opcode == IBV_WR_LOCAL_INV;
    const bool inv = wr->opcode == IBV_WR_SEND_WITH_INV || wr->opcode == IBV_WR_LOCAL_INV;
    s.imm_data = inv ? wr->invalidate_rkey : wr->imm_data;
    s.num_sge = local ? 0 : uint16_t(wr->num_sge);
    if (wr->opcode == IBV_WR_BIND_MW) {
      conn_->bind_keys_of()(*wr, s.rkey, s.remote_qpn);
      s.remote_addr = wr->bind_mw.bind_info.addr;
      s.compare_add = wr->bind_mw.bind_info.length;
      s.remote_qkey = wr->bind_mw.bind_info.mw_access_flags;
    } else if (type_ == IBV_QPT_UD) {
      s.ah = ah_handle(*wr);
      s.remote_qpn = wr->wr.ud.remote_qpn;
      s.remote_qkey = wr->wr.ud.remote_qkey;
    } else if (wr->opcode == IBV_WR_ATOMIC_CMP_AND_SWP || wr->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD) {
      s.remote_addr = wr->wr.atomic.remote_addr;
      s.rkey = wr->wr.atomic.rkey;
      s.compare_add = wr->wr.atomic.compare_add;
      s.swap = wr->wr.atomic.swap;
    } else {
      s.remote_addr = wr->wr.rdma.remote_addr;
      s.rkey = wr->wr.rdma.rkey;
    }
    s.inline_len = 0;
    if ((wr->send_flags & IBV_SEND_INLINE) && !local) {
      for (int i = 0; i < wr->num_sge; ++i) {
        std::memcpy(s.inline_data + s.inline_len, reinterpret_cast<const void*>(uintptr_t(wr->sg_list[i].addr)),
                    wr->sg_list[i].length);
        s.inline_len = uint16_t(s.inline_len + wr->sg_list[i].length);  // at most max_inline_ in all
      }
    } else if (s.num_sge > 0) {
      std::memcpy(s.sge, wr->sg_list, sizeof(ibv_sge) * size_t(wr->num_sge));
    }
    ++sq_producer_;
  }
  if (sq_producer_ != start) {
    ring->producer.value.store(sq_producer_, std::memory_order_release);
    conn_->ring_doorbell();
  }
  if (err != 0 && bad != nullptr) *bad = wr;
  return err;
}

int QueuePair::post_recv(const RecvWr* wr, const RecvWr** bad) {
  refresh_state(IBV_QPS_INIT);
  if (has_srq_ || state_ == IBV_QPS_RESET) {
    if (bad != nullptr) *bad = wr;
    return conn_->dead() ? EIO : EINVAL;
  }
  auto* ring = static_cast<RingHeader*>(rq_);
  const int err = push_recvs(*conn_, ring, rq_producer_, rq_entries_, max_recv_sge_, wr, bad);
  // A NIC has a receive once its doorbell is written; a UD datagram that
  // finds none is dropped, with no retry to cover a receive still in the
  // ring (a peer told "ready" right after this post, a send posted next on
  // another connection). RC's RNR retry covers the same window.
  if (type_ == IBV_QPT_UD) wait_taken(*conn_, ring, rq_producer_);
  return err;
}

}  // namespace uroce::client
