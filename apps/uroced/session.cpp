// SPDX-License-Identifier: BSD-3-Clause
// Control requests: every message is checked for its exact size and every
// handle looked up in this client's own table before anything is done.
#include "session.h"

#include <fcntl.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <rte_dev.h>
#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_memory.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <utility>

#include "log.h"

namespace uroced {

using namespace uroce::daemon;

namespace {

constexpr int kAccessMask = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
                            IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_MW_BIND;
constexpr uint32_t kRequiredSeals = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL;

uint32_t pow2_at_least(uint32_t n) {
  uint32_t p = 1;
  while (p < n) p <<= 1;
  return p;
}

uint64_t page_size() { return uint64_t(sysconf(_SC_PAGESIZE)); }

template <typename Map>
auto* find(Map& m, uint32_t handle) {
  auto it = m.find(handle);
  return it == m.end() ? nullptr : &it->second;
}

// For the debug log.
const char* op_name(Op op) {
  static constexpr const char* kNames[] = {"hello",   "alloc_pd",  "dealloc_pd", "create_cq", "destroy_cq",
                                           "create_qp", "destroy_qp", "modify_qp", "query_qp",  "alloc_mr",
                                           "reg_mr",  "dereg_mr",  "create_comp_channel", "destroy_comp_channel",
                                           "cm_open", "cm_listen", "cm_connect", "cm_accept", "cm_id_op",
                                           "cm_qp_attr", "cm_get_event", "neighbor", "create_srq", "destroy_srq",
                                           "modify_srq", "query_srq", "create_ah", "destroy_ah", "alloc_mw",
                                           "dealloc_mw"};
  const auto i = uint32_t(op) - uint32_t(Op::hello);
  return i < std::size(kNames) ? kNames[i] : "unknown";
}

}  // namespace

// ---- arena ----

bool Arena::create(uint64_t bytes, std::string& error) {
  fd_ = memfd_create("uroced-arena", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd_ < 0) return error = std::string("memfd_create: ") + std::strerror(errno), false;
  if (ftruncate(fd_, off_t(bytes)) != 0 || fcntl(fd_, F_ADD_SEALS, kRequiredSeals) != 0)
    return error = std::string("arena: ") + std::strerror(errno), false;
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd_, 0);
  if (p == MAP_FAILED) return error = std::string("arena mmap: ") + std::strerror(errno), false;
  base_ = static_cast<uint8_t*>(p);
  bytes_ = bytes;
  auto& h = header();
  h.magic = kMagic;
  h.version = kVersion;
  h.bytes = bytes;
  h.need_wakeup.store(0);
  free_[kArenaHeaderBytes] = bytes - kArenaHeaderBytes;
  return true;
}

Arena::~Arena() {
  if (base_ != nullptr) munmap(base_, bytes_);
  if (fd_ >= 0) close(fd_);
}

uint64_t Arena::alloc(uint64_t bytes) {
  bytes = (bytes + 63) & ~uint64_t(63);
  for (auto it = free_.begin(); it != free_.end(); ++it) {
    if (it->second < bytes) continue;
    const uint64_t at = it->first, left = it->second - bytes;
    free_.erase(it);
    if (left > 0) free_[at + bytes] = left;
    std::memset(base_ + at, 0, bytes);
    return at;
  }
  return 0;
}

void Arena::release(uint64_t offset, uint64_t bytes) {
  bytes = (bytes + 63) & ~uint64_t(63);
  auto it = free_.emplace(offset, bytes).first;
  auto next = std::next(it);
  if (next != free_.end() && it->first + it->second == next->first) {
    it->second += next->second;
    free_.erase(next);
  }
  if (it != free_.begin()) {
    auto prev = std::prev(it);
    if (prev->first + prev->second == it->first) {
      prev->second += it->second;
      free_.erase(it);
    }
  }
}

void MappedMr::unmap() {
  if (map == nullptr) return;
  if (dma_dev != nullptr) rte_dev_dma_unmap(dma_dev, map, reinterpret_cast<uintptr_t>(map), map_len);
  if (extmem) rte_extmem_unregister(map, map_len);
  munmap(map, map_len);
  map = nullptr;
  extmem = false;
  dma_dev = nullptr;
}

MappedMr::~MappedMr() { unmap(); }

MappedMr::MappedMr(MappedMr&& o) noexcept { *this = std::move(o); }

MappedMr& MappedMr::operator=(MappedMr&& o) noexcept {
  if (this == &o) return *this;
  unmap();
  mr = std::move(o.mr);
  pd = o.pd;
  map = std::exchange(o.map, nullptr);
  map_len = std::exchange(o.map_len, 0);
  extmem = std::exchange(o.extmem, false);
  dma_dev = std::exchange(o.dma_dev, nullptr);
  return *this;
}

bool Leftover::release() {
  for (auto it = mrs.begin(); it != mrs.end();) {
    if (it->mr) {
      uroce::ProtectionDomain& pd = it->mr->pd();
      if (pd.dereg_mr(it->mr) != 0) {
        ++it;
        continue;
      }
    }
    it = mrs.erase(it);
  }
  if (mrs.empty()) pds.clear();
  return mrs.empty();
}

// ---- session ----

Session::Session(uroce::Device& device, uroce::CompletionChannel& channel, CmHub& cm, const Limits& limits,
                 const RegionMemory& memory, int sock, const ucred& peer, uint32_t id)
    : device_(device), channel_(channel), cm_(cm), limits_(limits), memory_(memory), sock_(sock), peer_(peer),
      id_(id) {}

Session::~Session() {
  if (events_ >= 0) close(events_);
  if (doorbell_ >= 0) close(doorbell_);
  close(sock_);
}

bool Session::reply(const void* rep, size_t len, int fd) {
  const auto* h = static_cast<const RepHeader*>(rep);
  UROCED_LOG(DEBUG, "client %u: %s: %s", id_, op_name(h->op), h->status == 0 ? "done" : std::strerror(h->status));
  return send_datagram(sock_, rep, len, fd >= 0 ? &fd : nullptr, fd >= 0 ? 1 : 0) == 0;
}

bool Session::on_readable() {
  alignas(8) uint8_t buf[512];
  Received r = recv_datagram(sock_, buf, sizeof buf, MSG_DONTWAIT);
  if (r.len < 0 && (r.err == EAGAIN || r.err == EWOULDBLOCK)) return true;
  const bool framed = r.len >= ssize_t(sizeof(ReqHeader)) && !r.truncated &&
                      reinterpret_cast<const ReqHeader*>(buf)->size == uint32_t(r.len);
  if (!framed) {
    close_fds(r);
    return false;
  }
  const Op op = reinterpret_cast<const ReqHeader*>(buf)->op;
  if (!has_arena()) {
    close_fds(r);
    return op == Op::hello && hello(buf, size_t(r.len));
  }
  if (op == Op::hello) {
    close_fds(r);
    return false;
  }
  flush_posts();
  if (broken_) {
    close_fds(r);
    return false;
  }
  dispatch(op, buf, size_t(r.len), r);
  close_fds(r);  // whatever a handler did not take
  return !broken_;
}

bool Session::hello(const void* msg, size_t len) {
  auto rep = make_message<HelloRep>(Op::hello);
  rep.version = kVersion;
  const auto* req = static_cast<const HelloReq*>(msg);
  if (len != sizeof(HelloReq) || req->magic != kMagic || req->version != kVersion) {
    rep.h.status = EPROTO;
    reply(&rep, sizeof rep);
    return false;
  }
  std::string error;
  if (!arena_.create(limits_.arena_bytes, error)) {
    UROCED_LOG(ERR, "client %u: %s", id_, error.c_str());
    rep.h.status = ENOMEM;
    reply(&rep, sizeof rep);
    return false;
  }
  doorbell_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  int pipe_fds[2];
  if (doorbell_ < 0 || pipe2(pipe_fds, O_CLOEXEC) != 0) return false;
  // The daemon never blocks on a client: its end is non-blocking.
  fcntl(pipe_fds[1], F_SETFL, O_NONBLOCK);
  events_ = pipe_fds[1];
  rep.client_id = id_;
  std::snprintf(rep.device_name, sizeof rep.device_name, "%s", device_.name().c_str());
  const auto& gids = device_.gids();
  if (gids.size() > 1) std::memcpy(rep.gid, gids[1].bytes.data(), 16);
  if (!gids.empty()) std::memcpy(rep.link_local_gid, gids[0].bytes.data(), 16);
  rep.arena_bytes = arena_.bytes();
  rep.max_qp_wr = device_.limits().max_qp_wr;
  rep.max_cqe = device_.limits().max_cqe;
  rep.max_mr_size = std::min<uint64_t>(device_.limits().max_mr_size, limits_.max_mr_bytes);
  std::memcpy(rep.mac, device_.mac().bytes.data(), 6);
  rep.mtu = device_.mtu();
  rep.max_mw = std::min(device_.limits().max_mw, limits_.max_mw);
  const int fds[3] = {arena_.fd(), doorbell_, pipe_fds[0]};
  const bool sent = send_datagram(sock_, &rep, sizeof rep, fds, 3) == 0;
  close(pipe_fds[0]);
  return sent;
}

void Session::dispatch(Op op, const void* msg, size_t len, Received& r) {
  // Each request has one size; anything else is refused before it is read.
  auto sized = [&](size_t want) { return len == want; };
  switch (op) {
    case Op::alloc_pd: {
      auto rep = make_message<HandleRep>(op);
      rep.h.status = sized(sizeof(AllocPdReq)) ? alloc_pd(rep.handle) : EINVAL;
      reply(&rep, sizeof rep);
      return;
    }
    case Op::create_comp_channel: {
      auto rep = make_message<HandleRep>(op);
      int fd = -1;
      rep.h.status = sized(sizeof(AllocPdReq)) ? create_channel(rep.handle, fd) : EINVAL;
      reply(&rep, sizeof rep, fd);
      if (fd >= 0) close(fd);  // the client has its copy
      return;
    }
    case Op::destroy_comp_channel:
    case Op::dealloc_pd:
    case Op::destroy_cq:
    case Op::destroy_qp:
    case Op::destroy_srq:
    case Op::destroy_ah:
    case Op::dealloc_mw:
    case Op::dereg_mr: {
      auto rep = make_message<HandleRep>(op);
      if (!sized(sizeof(HandleReq))) {
        rep.h.status = EINVAL;
      } else {
        rep.handle = static_cast<const HandleReq*>(msg)->handle;
        rep.h.status = op == Op::destroy_comp_channel ? destroy_channel(rep.handle)
                       : op == Op::dealloc_pd  ? dealloc_pd(rep.handle)
                       : op == Op::destroy_cq ? destroy_cq(rep.handle)
                       : op == Op::destroy_qp ? destroy_qp(rep.handle)
                       : op == Op::destroy_srq ? destroy_srq(rep.handle)
                       : op == Op::destroy_ah ? destroy_ah(rep.handle)
                       : op == Op::dealloc_mw ? dealloc_mw(rep.handle)
                                              : dereg_mr(rep.handle, static_cast<const HandleReq*>(msg)->flags);
      }
      reply(&rep, sizeof rep);
      return;
    }
    case Op::create_cq: {
      auto rep = make_message<CreateCqRep>(op);
      rep.h.status = sized(sizeof(CreateCqReq)) ? create_cq(*static_cast<const CreateCqReq*>(msg), rep) : EINVAL;
      reply(&rep, sizeof rep);
      return;
    }
    case Op::create_qp: {
      auto rep = make_message<CreateQpRep>(op);
      rep.h.status = sized(sizeof(CreateQpReq)) ? create_qp(*static_cast<const CreateQpReq*>(msg), rep) : EINVAL;
      reply(&rep, sizeof rep);
      return;
    }
    case Op::create_srq: {
      auto rep = make_message<CreateSrqRep>(op);
      rep.h.status = sized(sizeof(CreateSrqReq)) ? create_srq(*static_cast<const CreateSrqReq*>(msg), rep) : EINVAL;
      reply(&rep, sizeof rep);
      return;
    }
    case Op::modify_srq: {
      auto rep = make_message<HandleRep>(op);
      rep.h.status = sized(sizeof(ModifySrqReq)) ? modify_srq(*static_cast<const ModifySrqReq*>(msg)) : EINVAL;
      reply(&rep, sizeof rep);
      return;
    }
    case Op::query_srq: {
      auto rep = make_message<QuerySrqRep>(op);
      rep.h.status = sized(sizeof(HandleReq)) ? query_srq(static_cast<const HandleReq*>(msg)->handle, rep) : EINVAL;
      reply(&rep, sizeof rep);
      return;
    }
    case Op::create_ah: {
      auto rep = make_message<HandleRep>(op);
      rep.h.status = sized(sizeof(CreateAhReq)) ? create_ah(*static_cast<const CreateAhReq*>(msg), rep.handle) : EINVAL;
      reply(&rep, sizeof rep);
      return;
    }
    case Op::alloc_mw: {
      auto rep = make_message<MwRep>(op);
      rep.h.status = sized(sizeof(AllocMwReq)) ? alloc_mw(*static_cast<const AllocMwReq*>(msg), rep) : EINVAL;
      reply(&rep, sizeof rep);
      return;
    }
    case Op::modify_qp: {
      auto rep = make_message<HandleRep>(op);
      rep.h.status = sized(sizeof(ModifyQpReq)) ? modify_qp(*static_cast<const ModifyQpReq*>(msg)) : EINVAL;
      reply(&rep, sizeof rep);
      return;
    }
    case Op::query_qp: {
      auto rep = make_message<QueryQpRep>(op);
      rep.h.status =
          sized(sizeof(HandleReq)) ? query_qp(static_cast<const HandleReq*>(msg)->handle, rep.attr) : EINVAL;
      reply(&rep, sizeof rep);
      return;
    }
    case Op::alloc_mr: {
      auto rep = make_message<MrRep>(op);
      int fd = -1;
      rep.h.status = sized(sizeof(AllocMrReq)) ? alloc_mr(*static_cast<const AllocMrReq*>(msg), rep, fd) : EINVAL;
      reply(&rep, sizeof rep, rep.h.status == 0 ? fd : -1);
      if (fd >= 0) close(fd);  // the client has its copy; the daemon keeps its mapping
      return;
    }
    case Op::reg_mr: {
      auto rep = make_message<MrRep>(op);
      rep.h.status = sized(sizeof(RegMrReq)) ? reg_mr(*static_cast<const RegMrReq*>(msg), rep, r) : EINVAL;
      reply(&rep, sizeof rep);
      return;
    }
    case Op::cm_open:
    case Op::cm_listen:
    case Op::cm_connect:
    case Op::cm_accept:
    case Op::cm_id_op:
    case Op::cm_qp_attr:
    case Op::cm_get_event:
    case Op::neighbor:
      dispatch_cm(op, msg, len);
      return;
    default: {
      auto rep = make_message<HandleRep>(op);
      rep.h.status = EOPNOTSUPP;
      reply(&rep, sizeof rep);
      return;
    }
  }
}

int Session::over_quota(const char* key, uint64_t limit) {
  if (std::find(quotas_logged_.begin(), quotas_logged_.end(), key) == quotas_logged_.end()) {
    quotas_logged_.push_back(key);
    UROCED_LOG(NOTICE, "client %u (pid %d): [limits] %s = %llu reached: refused with ENOMEM", id_, int(peer_.pid), key,
               static_cast<unsigned long long>(limit));
  }
  return ENOMEM;
}

uint32_t Session::new_handle() {
  // Ends: the quotas keep the live objects far fewer than 2^32.
  for (;;) {
    const uint32_t h = next_handle_++;
    if (h != 0 && !pds_.count(h) && !cqs_.count(h) && !qps_.count(h) && !srqs_.count(h) && !ahs_.count(h) &&
        !mws_.count(h) && !mrs_.count(h) && !channels_.count(h))
      return h;
  }
}

int Session::alloc_pd(uint32_t& handle) {
  if (pds_.size() >= limits_.max_pd) return over_quota("max_pd", limits_.max_pd);
  handle = new_handle();
  pds_[handle].pd = device_.alloc_pd();
  return 0;
}

int Session::dealloc_pd(uint32_t handle) {
  Pd* pd = find(pds_, handle);
  if (pd == nullptr) return EINVAL;
  if (pd->children > 0) return EBUSY;
  pds_.erase(handle);
  return 0;
}

Channel::~Channel() {
  if (write_fd >= 0) close(write_fd);
}

int Session::create_channel(uint32_t& handle, int& read_fd) {
  if (channels_.size() >= limits_.max_cq) return over_quota("max_cq", limits_.max_cq);
  int fds[2];
  if (pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) return errno == EMFILE || errno == ENFILE ? errno : ENOMEM;
  // The client's end blocks unless it asks otherwise, as a verbs channel does.
  fcntl(fds[0], F_SETFL, 0);
  read_fd = fds[0];
  handle = new_handle();
  channels_[handle].write_fd = fds[1];
  return 0;
}

int Session::destroy_channel(uint32_t handle) {
  Channel* ch = find(channels_, handle);
  if (ch == nullptr) return EINVAL;
  if (ch->users > 0) return EBUSY;
  channels_.erase(handle);
  return 0;
}

int Session::create_cq(const CreateCqReq& req, CreateCqRep& rep) {
  if (cqs_.size() >= limits_.max_cq) return over_quota("max_cq", limits_.max_cq);
  if (req.cqe == 0 || req.cqe > device_.limits().max_cqe) return EINVAL;
  Channel* channel = req.channel == 0 ? nullptr : find(channels_, req.channel);
  if (req.channel != 0 && channel == nullptr) return EINVAL;
  Cq cq;
  cq.channel = req.channel;
  cq.entries = pow2_at_least(req.cqe);
  cq.bytes = ring_bytes<CqSlot>(cq.entries);
  cq.offset = arena_.alloc(cq.bytes);
  if (cq.offset == 0) return over_quota("arena_bytes", arena_.bytes());
  int err = 0;
  cq.cq = device_.create_cq(int(cq.entries), &channel_, 0, err);
  if (!cq.cq) {
    arena_.release(cq.offset, cq.bytes);
    return err;
  }
  if (channel != nullptr) ++channel->users;
  rep.cq = cq.handle = new_handle();
  rep.entries = cq.entries;
  rep.ring_offset = cq.offset;
  cqs_.emplace(rep.cq, std::move(cq));
  return 0;
}

int Session::destroy_cq(uint32_t handle) {
  Cq* cq = find(cqs_, handle);
  if (cq == nullptr) return EINVAL;
  if (cq->users > 0) return EBUSY;
  if (cq->channel != 0) --channels_.at(cq->channel).users;
  arena_.release(cq->offset, cq->bytes);
  cqs_.erase(handle);
  return 0;
}

int Session::create_qp(const CreateQpReq& req, CreateQpRep& rep) {
  Pd* pd = find(pds_, req.pd);
  Cq* scq = find(cqs_, req.send_cq);
  Cq* rcq = find(cqs_, req.recv_cq);
  Srq* srq = req.srq != 0 ? find(srqs_, req.srq) : nullptr;
  const bool type_ok = req.qp_type == IBV_QPT_RC || req.qp_type == IBV_QPT_UC || req.qp_type == IBV_QPT_UD;
  if (pd == nullptr || scq == nullptr || rcq == nullptr || !type_ok) return EINVAL;
  if (req.srq != 0 && (srq == nullptr || srq->pd != req.pd)) return EINVAL;
  // SRQs count as QPs.
  if (qps_.size() + srqs_.size() >= limits_.max_qp) return over_quota("max_qp", limits_.max_qp);
  const uint32_t max_wr = device_.limits().max_qp_wr;
  if (req.max_send_wr > max_wr || req.max_recv_wr > max_wr || req.max_send_sge > kMaxSge ||
      req.max_recv_sge > kMaxSge || req.max_inline_data > kMaxInline) {
    // What a program asked for beyond what the daemon serves, for its
    // operator; once per client, as the quotas.
    static const char* const kCaps = "create_qp caps";
    if (std::find(quotas_logged_.begin(), quotas_logged_.end(), kCaps) != quotas_logged_.end()) return EINVAL;
    quotas_logged_.push_back(kCaps);
    UROCED_LOG(NOTICE,
               "client %u (pid %d): create_qp refused: %u/%u WRs, %u/%u SGEs, %u inline bytes "
               "(the daemon's QPs: up to %u WRs, %u SGEs, %u inline bytes)",
               id_, int(peer_.pid), req.max_send_wr, req.max_recv_wr, req.max_send_sge, req.max_recv_sge,
               req.max_inline_data, max_wr, kMaxSge, kMaxInline);
    return EINVAL;
  }
  Qp qp;
  qp.pd = req.pd;
  qp.type = ibv_qp_type(req.qp_type);
  qp.send_cq = req.send_cq;
  qp.recv_cq = req.recv_cq;
  qp.sq_entries = pow2_at_least(std::max(req.max_send_wr, 1u));  // a receive-only QP (qperf's) has none
  qp.rq_entries = pow2_at_least(std::max(req.max_recv_wr, 1u));
  qp.sq_bytes = ring_bytes<SendSlot>(qp.sq_entries);
  qp.rq_bytes = ring_bytes<RecvSlot>(qp.rq_entries);
  qp.sq_offset = arena_.alloc(qp.sq_bytes);
  qp.rq_offset = qp.sq_offset == 0 ? 0 : arena_.alloc(qp.rq_bytes);
  if (qp.rq_offset == 0) {
    if (qp.sq_offset != 0) arena_.release(qp.sq_offset, qp.sq_bytes);
    return over_quota("arena_bytes", arena_.bytes());
  }
  uroce::QpInitAttr init;
  init.send_cq = scq->cq.get();
  init.recv_cq = rcq->cq.get();
  init.qp_type = ibv_qp_type(req.qp_type);
  init.sq_sig_all = req.sq_sig_all != 0;
  init.cap.max_send_wr = req.max_send_wr;
  init.cap.max_recv_wr = std::max(req.max_recv_wr, 1u);
  init.cap.max_send_sge = std::max(req.max_send_sge, 1u);
  init.cap.max_recv_sge = std::max(req.max_recv_sge, 1u);
  init.cap.max_inline_data = req.max_inline_data;
  init.srq = srq != nullptr ? srq->srq.get() : nullptr;
  int err = 0;
  qp.qp = pd->pd->create_qp(init, err);
  if (!qp.qp) {
    arena_.release(qp.sq_offset, qp.sq_bytes);
    arena_.release(qp.rq_offset, qp.rq_bytes);
    return err != 0 ? err : ENOMEM;
  }
  qp.max_send_sge = init.cap.max_send_sge;
  qp.max_recv_sge = init.cap.max_recv_sge;
  qp.max_inline = req.max_inline_data;
  ++pd->children;
  ++scq->users;
  ++rcq->users;
  if (srq != nullptr) ++srq->users, qp.srq = req.srq;
  rep.qp = new_handle();
  rep.qpn = qp.qp->qp_num();
  rep.sq_offset = qp.sq_offset;
  rep.rq_offset = qp.rq_offset;
  rep.sq_entries = qp.sq_entries;
  rep.rq_entries = qp.rq_entries;
  rep.max_send_sge = qp.max_send_sge;
  rep.max_recv_sge = qp.max_recv_sge;
  rep.max_inline_data = qp.max_inline;
  qps_.emplace(rep.qp, std::move(qp));
  return 0;
}

int Session::destroy_qp(uint32_t handle) {
  Qp* qp = find(qps_, handle);
  if (qp == nullptr) return EINVAL;
  // Completions of the QP already in its CQs stay there and reach the
  // client's rings as any other.
  cm_.detach_qp(*qp->qp);
  qp->qp.reset();
  --pds_.at(qp->pd).children;
  --cqs_.at(qp->send_cq).users;
  --cqs_.at(qp->recv_cq).users;
  if (qp->srq != 0) --srqs_.at(qp->srq).users;
  arena_.release(qp->sq_offset, qp->sq_bytes);
  arena_.release(qp->rq_offset, qp->rq_bytes);
  qps_.erase(handle);
  return 0;
}

int Session::create_srq(const CreateSrqReq& req, CreateSrqRep& rep) {
  Pd* pd = find(pds_, req.pd);
  if (pd == nullptr || req.max_wr == 0 || req.max_wr > device_.limits().max_qp_wr || req.max_sge == 0 ||
      req.max_sge > kMaxSge || req.srq_limit > req.max_wr)
    return EINVAL;
  if (qps_.size() + srqs_.size() >= limits_.max_qp) return over_quota("max_qp", limits_.max_qp);
  Srq q;
  q.pd = req.pd;
  q.entries = pow2_at_least(req.max_wr);
  q.bytes = ring_bytes<RecvSlot>(q.entries);
  q.offset = arena_.alloc(q.bytes);
  if (q.offset == 0) return over_quota("arena_bytes", arena_.bytes());
  uroce::SrqInitAttr init;
  init.max_wr = req.max_wr;
  init.max_sge = req.max_sge;
  int err = 0;
  q.srq = pd->pd->create_srq(init, err);
  if (q.srq && req.srq_limit != 0) {
    ibv_srq_attr attr{};
    attr.srq_limit = req.srq_limit;
    err = q.srq->modify(attr, IBV_SRQ_LIMIT);
    if (err != 0) q.srq.reset();
  }
  if (!q.srq) {
    arena_.release(q.offset, q.bytes);
    return err != 0 ? err : ENOMEM;
  }
  q.max_sge = req.max_sge;
  ++pd->children;
  rep.srq = new_handle();
  rep.entries = q.entries;
  rep.ring_offset = q.offset;
  rep.max_wr = q.srq->max_wr();
  rep.max_sge = q.max_sge;
  srqs_.emplace(rep.srq, std::move(q));
  return 0;
}

int Session::destroy_srq(uint32_t handle) {
  Srq* q = find(srqs_, handle);
  if (q == nullptr) return EINVAL;
  if (q->users > 0) return EBUSY;
  q->srq.reset();
  --pds_.at(q->pd).children;
  arena_.release(q->offset, q->bytes);
  srqs_.erase(handle);
  return 0;
}

int Session::modify_srq(const ModifySrqReq& req) {
  Srq* q = find(srqs_, req.srq);
  if (q == nullptr || req.attr_mask != IBV_SRQ_LIMIT) return EINVAL;
  ibv_srq_attr attr{};
  attr.srq_limit = req.srq_limit;
  return q->srq->modify(attr, IBV_SRQ_LIMIT);
}

int Session::query_srq(uint32_t handle, QuerySrqRep& rep) {
  Srq* q = find(srqs_, handle);
  if (q == nullptr) return EINVAL;
  ibv_srq_attr attr{};
  const int err = q->srq->query(attr);
  rep.max_wr = attr.max_wr;
  rep.max_sge = attr.max_sge;
  rep.srq_limit = attr.srq_limit;
  return err;
}

int Session::create_ah(const CreateAhReq& req, uint32_t& handle) {
  Pd* pd = find(pds_, req.pd);
  if (pd == nullptr) return EINVAL;
  if (ahs_.size() >= limits_.max_ah) return over_quota("max_ah", limits_.max_ah);
  // The device checks the rest (a global route, the GID index, the address
  // family) and resolves the MAC: EHOSTUNREACH while it is not known yet.
  int err = 0;
  Ah a;
  a.ah = pd->pd->create_ah(req.attr, err);
  if (!a.ah) return err != 0 ? err : ENOMEM;
  a.pd = req.pd;
  ++pd->children;
  handle = new_handle();
  ahs_.emplace(handle, std::move(a));
  return 0;
}

int Session::destroy_ah(uint32_t handle) {
  Ah* a = find(ahs_, handle);
  if (a == nullptr) return EINVAL;
  a->ah.reset();
  --pds_.at(a->pd).children;
  ahs_.erase(handle);
  return 0;
}

int Session::alloc_mw(const AllocMwReq& req, MwRep& rep) {
  Pd* pd = find(pds_, req.pd);
  if (pd == nullptr) return EINVAL;
  if (mws_.size() >= limits_.max_mw) return over_quota("max_mw", limits_.max_mw);
  int err = 0;
  Mw w;
  w.mw = pd->pd->alloc_mw(ibv_mw_type(req.type), err);  // EINVAL for another type
  if (!w.mw) return err != 0 ? err : ENOMEM;
  w.pd = req.pd;
  ++pd->children;
  rep.mw = new_handle();
  rep.rkey = w.mw->rkey();
  mw_by_key_[w.mw->handle()] = rep.mw;
  mws_.emplace(rep.mw, std::move(w));
  return 0;
}

int Session::dealloc_mw(uint32_t handle) {
  Mw* w = find(mws_, handle);
  if (w == nullptr) return EINVAL;
  mw_by_key_.erase(w->mw->handle());
  // Posted binds and invalidations that name it have reached the engine
  // (flush_posts, before every control request); the engine's pause lets
  // it take them, and unbinds the window.
  w->mw.reset();
  --pds_.at(w->pd).children;
  mws_.erase(handle);
  return 0;
}

int Session::modify_qp(const ModifyQpReq& req) {
  Qp* qp = find(qps_, req.qp);
  if (qp == nullptr) return EINVAL;
  constexpr int kKnown = (IBV_QP_RATE_LIMIT << 1) - 1;
  if ((req.attr_mask & ~kKnown) != 0) return EINVAL;
  const int err = qp->qp->modify(req.attr, req.attr_mask);
  if (err == 0 && (req.attr_mask & IBV_QP_STATE) && req.attr.qp_state == IBV_QPS_RESET) {
    qp->failed = false;
  }
  return err;
}

int Session::query_qp(uint32_t handle, ibv_qp_attr& attr) {
  Qp* qp = find(qps_, handle);
  if (qp == nullptr) return EINVAL;
  uroce::QpInitAttr init;
  return qp->qp->query(attr, -1, init);
}

int Session::register_mapping(uint32_t pd_handle, MappedMr&& m, void* host, uint64_t iova, uint64_t length,
                              int access, MrRep& rep) {
  Pd* pd = find(pds_, pd_handle);
  int err = 0;
  m.mr = pd->pd->reg_mr_iova(host, length, iova, access, err);
  if (!m.mr) return err != 0 ? err : ENOMEM;
  m.pd = pd_handle;
  ++pd->children;
  mr_bytes_ += m.map_len;
  rep.mr = new_handle();
  rep.key = m.mr->lkey();
  rep.addr = iova;
  rep.length = length;
  mr_by_key_[rep.key] = &mrs_.emplace(rep.mr, std::move(m)).first->second;
  return 0;
}

int Session::mr_quota(uint64_t map_len) {
  if (mrs_.size() >= limits_.max_mr) return over_quota("max_mr", limits_.max_mr);
  if (map_len > limits_.max_mr_bytes - std::min(mr_bytes_, limits_.max_mr_bytes))
    return over_quota("max_mr_bytes", limits_.max_mr_bytes);
  return 0;
}

namespace {

constexpr uint64_t kHugePage = uint64_t(2) << 20;
constexpr unsigned kMfdHuge2Mb = 21u << 26;  // MFD_HUGE_2MB of <linux/memfd.h>: log2 of the page size

// A sealed memfd of `len` bytes mapped shared and populated into m.
bool map_sealed(int fd, uint64_t len, MappedMr& m) {
  if (ftruncate(fd, off_t(len)) != 0 || fcntl(fd, F_ADD_SEALS, kRequiredSeals) != 0) return false;
  void* p = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
  if (p == MAP_FAILED) return false;
  m.map = p;
  m.map_len = len;
  return true;
}

// Huge pages made DPDK memory: zero-copy transmit from them, and for a
// NIC behind VFIO, its IOMMU mapping (IOVA = VA, the only mode in which the
// engine hands application memory to a NIC). A software port maps nothing.
void register_extmem(MappedMr& m, uint16_t port) {
  if (rte_extmem_register(m.map, m.map_len, nullptr, 0, kHugePage) != 0) return;
  m.extmem = true;
  rte_eth_dev_info info{};
  if (port == UINT16_MAX || rte_eal_iova_mode() != RTE_IOVA_VA || rte_eth_dev_info_get(port, &info) != 0 ||
      info.device == nullptr)
    return;
  if (rte_dev_dma_map(info.device, m.map, reinterpret_cast<uintptr_t>(m.map), m.map_len) == 0) m.dma_dev = info.device;
}

}  // namespace

bool Session::fits(uint64_t map_len) const {
  return mrs_.size() < limits_.max_mr && map_len <= limits_.max_mr_bytes - std::min(mr_bytes_, limits_.max_mr_bytes);
}

int Session::region_memfd(uint64_t length, MappedMr& m) {
  const uint64_t huge_len = (length + kHugePage - 1) & ~(kHugePage - 1);
  if (memory_.hugepages && length >= kHugePage && fits(huge_len)) {
    // No free huge pages: mmap fails (they are reserved there) and the
    // region goes on small pages.
    const int fd = memfd_create("uroced-mr", MFD_CLOEXEC | MFD_ALLOW_SEALING | MFD_HUGETLB | kMfdHuge2Mb);
    if (fd >= 0 && map_sealed(fd, huge_len, m)) {
      register_extmem(m, memory_.dma_port);
      UROCED_LOG(DEBUG, "client %u: alloc_mr of %llu bytes on 2 MiB pages%s%s", id_,
                 static_cast<unsigned long long>(length), m.extmem ? ", DPDK external memory" : "",
                 m.dma_dev != nullptr ? ", DMA-mapped for the port" : "");
      return fd;
    }
    if (fd >= 0) close(fd);
  }
  const uint64_t len = (length + page_size() - 1) & ~(page_size() - 1);
  const int fd = memfd_create("uroced-mr", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd >= 0 && map_sealed(fd, len, m)) return fd;
  if (fd >= 0) close(fd);
  return -1;
}

int Session::alloc_mr(const AllocMrReq& req, MrRep& rep, int& fd) {
  if (find(pds_, req.pd) == nullptr || (req.access & ~kAccessMask) != 0 || req.length == 0) return EINVAL;
  if (const int err = mr_quota((req.length + page_size() - 1) & ~(page_size() - 1)); err != 0) return err;
  MappedMr m;
  fd = region_memfd(req.length, m);
  if (fd < 0) return ENOMEM;
  void* p = m.map;
  const int err = register_mapping(req.pd, std::move(m), p, reinterpret_cast<uintptr_t>(p), req.length, req.access, rep);
  if (err != 0) {
    close(fd);
    fd = -1;
  }
  return err;
}

int Session::reg_mr(const RegMrReq& req, MrRep& rep, Received& r) {
  const uint64_t page = page_size();
  const bool shape_ok = find(pds_, req.pd) != nullptr && (req.access & ~kAccessMask) == 0 && req.length > 0 &&
                        req.map_addr % page == 0 && req.map_length % page == 0 && req.map_length > 0 &&
                        req.map_addr + req.map_length > req.map_addr && req.addr >= req.map_addr &&
                        req.length <= req.map_length && req.addr - req.map_addr <= req.map_length - req.length &&
                        req.segments >= 1 && req.segments <= kMaxRegSegments && r.nfds == int(req.segments) &&
                        req.iova + req.length > req.iova;
  if (!shape_ok) return EINVAL;
  // The segments cover the range in order, in whole pages of their files.
  uint64_t at = req.map_addr;
  for (uint32_t i = 0; i < req.segments; ++i) {
    const RegSegment& s = req.seg[i];
    if (s.addr != at || s.length == 0 || s.length % page || s.offset % page ||
        s.length > req.map_addr + req.map_length - at || s.offset + s.length < s.offset)
      return EINVAL;
    at += s.length;
  }
  if (at != req.map_addr + req.map_length) return EINVAL;
  if (const int err = mr_quota(req.map_length); err != 0) return err;
  // A client that could shrink a file would make the daemon fault on the
  // pages it cut off.
  for (uint32_t i = 0; i < req.segments; ++i) {
    const int seals = fcntl(r.fds[i], F_GET_SEALS);
    struct stat st {};
    if (seals < 0 || (uint32_t(seals) & kRequiredSeals) != kRequiredSeals) return EPERM;
    if (fstat(r.fds[i], &st) != 0 || uint64_t(st.st_size) < req.seg[i].offset + req.seg[i].length) return EINVAL;
    // A hole punched in a huge-page file can cost the daemon a SIGBUS
    // (daemon.md): with hugepage_regions = off no client's memory is on them.
    struct statfs fs {};
    if (!memory_.hugepages && (fstatfs(r.fds[i], &fs) != 0 || fs.f_type == HUGETLBFS_MAGIC)) return EPERM;
  }
  // Wherever there is room: the region keeps the client's addresses (or the
  // IOVA it chose) as its IOVA, so clients whose buffers sit at the same
  // addresses (forked workers) each register theirs. The segments go side
  // by side into one reservation.
  void* p = mmap(nullptr, req.map_length, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) return ENOMEM;
  for (uint32_t i = 0; i < req.segments; ++i) {
    const RegSegment& s = req.seg[i];
    void* want = static_cast<uint8_t*>(p) + (s.addr - req.map_addr);
    if (mmap(want, s.length, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, r.fds[i], off_t(s.offset)) != want) {
      munmap(p, req.map_length);
      return ENOMEM;
    }
  }
  MappedMr m;
  m.map = p;
  m.map_len = req.map_length;
  return register_mapping(req.pd, std::move(m), static_cast<uint8_t*>(p) + (req.addr - req.map_addr), req.iova,
                          req.length, req.access, rep);
}

int Session::dereg_mr(uint32_t handle, uint32_t flags) {
  MappedMr* m = find(mrs_, handle);
  if (m == nullptr) return EINVAL;
  const uint32_t key = m->mr->lkey();
  Pd& pd = pds_.at(m->pd);
  int err = pd.pd->dereg_mr(m->mr);
  // EINVAL: windows are bound to it (nothing in flight uses it, which is
  // EBUSY). The region's destructor unbinds them, as in process.
  if (err == EINVAL && (flags & kDeregUnbind)) m->mr.reset(), err = 0;
  if (err != 0) return err;
  --pd.children;
  mr_bytes_ -= m->map_len;
  mr_by_key_.erase(key);
  mrs_.erase(handle);
  return 0;
}

bool Session::forward_event(const uroce::AsyncEvent& ev) {
  AsyncRecord rec{uint32_t(ev.event_type), EventObject::device, 0};
  for (const auto& [h, qp] : qps_)
    if (ev.qp != nullptr && qp.qp.get() == ev.qp) rec.object = EventObject::qp, rec.handle = h;
  for (const auto& [h, cq] : cqs_)
    if (ev.cq != nullptr && cq.cq.get() == ev.cq) rec.object = EventObject::cq, rec.handle = h;
  for (const auto& [h, q] : srqs_)
    if (ev.srq != nullptr && q.srq.get() == ev.srq) rec.object = EventObject::srq, rec.handle = h;
  if (rec.object == EventObject::device) return false;
  (void)!write(events_, &rec, sizeof rec);
  return true;
}

namespace {

const char* qp_type_name(ibv_qp_type t) {
  switch (t) {
    case IBV_QPT_RC: return "RC";
    case IBV_QPT_UC: return "UC";
    case IBV_QPT_UD: return "UD";
    default: return "other";
  }
}

const char* qp_state_name(ibv_qp_state st) {
  switch (st) {
    case IBV_QPS_RESET: return "RESET";
    case IBV_QPS_INIT: return "INIT";
    case IBV_QPS_RTR: return "RTR";
    case IBV_QPS_RTS: return "RTS";
    case IBV_QPS_SQD: return "SQD";
    case IBV_QPS_SQE: return "SQE";
    case IBV_QPS_ERR: return "ERR";
    default: return "unknown";
  }
}

}  // namespace

void Session::describe(ClientView& client, std::vector<QpView>& qps) const {
  client.id = id_;
  client.pid = peer_.pid;
  client.uid = peer_.uid;
  client.gid = peer_.gid;
  client.device = device_.name();
  client.pds = uint32_t(pds_.size());
  client.cqs = uint32_t(cqs_.size());
  client.qps = uint32_t(qps_.size());
  client.mrs = uint32_t(mrs_.size());
  client.mws = uint32_t(mws_.size());
  client.channels = uint32_t(channels_.size());
  client.mr_bytes = mr_bytes_;
  for (const auto& [handle, q] : qps_) {
    QpView v;
    v.client = id_;
    v.device = device_.name();
    v.qpn = q.qp->qp_num();
    v.type = qp_type_name(q.qp->qp_type());
    v.state = qp_state_name(q.qp->state());
    v.cc = q.qp->cc_stats();
    qps.push_back(v);
  }
}

void Session::teardown(Leftover& left) {
  // Its connections first: a request not answered is rejected, an
  // established connection disconnected (DREQ), as Linux does for a
  // process that ends; its ports are free again.
  cm_.forget(id_);
  for (auto& [h, qp] : qps_) cm_.detach_qp(*qp.qp);
  // QPs to error first, so peers see errors at once, then gone.
  for (auto& [h, qp] : qps_) {
    ibv_qp_attr attr{};
    attr.qp_state = IBV_QPS_ERR;
    qp.qp->modify(attr, IBV_QP_STATE);
  }
  for (auto& [h, qp] : qps_) qp.qp.reset();
  qps_.clear();
  srqs_.clear();  // after their QPs; the receives still posted give their regions back
  ahs_.clear();
  mw_by_key_.clear();
  mws_.clear();  // after their QPs (a type 2 window is bound to one), before their regions
  cqs_.clear();
  mr_by_key_.clear();
  for (auto& [h, m] : mrs_) {
    uroce::ProtectionDomain& pd = m.mr->pd();
    if (pd.dereg_mr(m.mr) != 0) left.mrs.push_back(std::move(m));
  }
  mrs_.clear();
  for (auto& [h, pd] : pds_) left.pds.push_back(std::move(pd.pd));
  pds_.clear();
  channels_.clear();
}

}  // namespace uroced
