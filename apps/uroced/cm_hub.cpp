// SPDX-License-Identifier: BSD-3-Clause
#include "cm_hub.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <vector>

namespace uroced {
namespace {

using namespace uroce::daemon;
using uroce::cm::Event;
using uroce::cm::EventType;

// Requests a client has not taken yet, beyond which new ones are refused
// (REJ, as a full listen backlog is on Linux).
constexpr size_t kInboxLimit = 4096;
// Connections one client may have at once (each a few hundred bytes of
// the manager's, and MADs on the wire): past it, ENOMEM.
constexpr size_t kIdsPerClient = 16384;

uroce::cm::ConnParam param_of(const CmParam& p) {
  uroce::cm::ConnParam out;
  out.private_data.assign(p.private_data, p.private_data + std::min<uint32_t>(p.private_data_len, kCmPrivateData));
  out.responder_resources = p.responder_resources;
  out.initiator_depth = p.initiator_depth;
  out.retry_count = p.retry_count;
  out.rnr_retry_count = p.rnr_retry_count;
  out.flow_control = p.flow_control != 0;
  out.local_port = p.local_port;
  return out;
}

}  // namespace

CmInbox::~CmInbox() {
  if (write_fd_ >= 0) close(write_fd_);
}

int CmInbox::open() {
  if (write_fd_ >= 0) {
    errno = EBUSY;  // one manager per client: a second would take the first's events
    return -1;
  }
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return -1;
  fcntl(fds[1], F_SETFL, O_NONBLOCK);
  write_fd_ = fds[1];
  return fds[0];
}

void CmInbox::signal() {
  const char one = 1;
  if (write(write_fd_, &one, 1) < 0) {
    // EAGAIN: full, readable anyway; EPIPE: the client closed its end
  }
}

void CmInbox::push(Event e) {
  events_.push_back(std::move(e));
  if (write_fd_ >= 0) signal();
}

bool CmInbox::pop(Event& e) {
  if (events_.empty()) return false;
  e = std::move(events_.front());
  events_.pop_front();
  if (!events_.empty()) signal();
  return true;
}

int CmHub::open(std::string& error) {
  if (cm_) return 0;
  cm_ = uroce::cm::ConnectionManager::open(device_, error);
  return cm_ ? 0 : EBUSY;
}

size_t CmHub::count(uint32_t client) const {
  auto it = ids_.find(client);
  return it == ids_.end() ? 0 : it->second;
}

void CmHub::own(uint64_t id, uint32_t client) {
  if (owner_.emplace(id, client).second) ++ids_[client];
}

void CmHub::disown(uint64_t id) {
  auto it = owner_.find(id);
  if (it == owner_.end()) return;
  if (--ids_[it->second] == 0) ids_.erase(it->second);
  owner_.erase(it);
}

bool CmHub::owns(uint32_t client, uint64_t id) const {
  auto it = owner_.find(id);
  return it != owner_.end() && it->second == client;
}

void CmHub::dispatch(const std::function<CmInbox*(uint32_t)>& inbox) {
  if (!cm_) return;
  Event e;
  while (cm_->get_event(e)) {
    uint32_t client = 0;
    if (e.type == EventType::connect_request) {
      auto it = ports_.find({e.ud, e.port});
      if (it != ports_.end()) client = it->second;
      CmInbox* in = client ? inbox(client) : nullptr;
      if (!in || in->size() >= kInboxLimit || count(client) >= kIdsPerClient) {
        cm_->reject(e.id, {});
        continue;
      }
      own(e.id, client);
      in->push(std::move(e));
      continue;
    }
    auto it = owner_.find(e.id);
    if (it == owner_.end()) continue;  // released meanwhile
    client = it->second;
    // The manager has forgotten the connection: a SIDR exchange answered,
    // a REQ rejected or unanswered, a QP that could not be connected.
    if ((e.ud && e.type != EventType::connect_request) || e.type == EventType::rejected ||
        e.type == EventType::unreachable || e.type == EventType::connect_error)
      disown(e.id);
    if (CmInbox* in = inbox(client)) in->push(std::move(e));
  }
}

int CmHub::listen(uint32_t client, uid_t uid, const CmListenReq& req) {
  if (!cm_) return EINVAL;
  const std::pair<bool, uint16_t> key{req.ud != 0, req.port};
  if (!req.on) {
    auto it = ports_.find(key);
    if (it == ports_.end() || it->second != client) return EINVAL;
    ports_.erase(it);
    return req.ud ? cm_->stop_listening_ud(req.port) : cm_->stop_listening(req.port);
  }
  if (req.port == 0) return EINVAL;
  if (req.port < 1024 && uid != 0) return EACCES;
  if (ports_.count(key)) return EADDRINUSE;
  const int err = req.ud ? cm_->listen_ud(req.port) : cm_->listen(req.port);
  if (err == 0) ports_[key] = client;
  return err;
}

int CmHub::connect(uint32_t client, uroce::QueuePair* qp, const CmConnectReq& req, uint64_t& id) {
  if (!cm_) return EINVAL;
  if (count(client) >= kIdsPerClient) return ENOMEM;
  uroce::wire::IpAddr peer;
  std::copy(req.peer, req.peer + 16, peer.bytes.begin());
  const auto p = param_of(req.param);
  int err = 0;
  if (req.ud) err = cm_->resolve_service(peer, req.port, p, id);
  else if (qp) err = cm_->connect(*qp, peer, req.port, p, id);
  else err = cm_->connect(req.qpn, ibv_qp_type(req.qp_type), peer, req.port, p, id);
  if (err == 0) own(id, client);
  return err;
}

int CmHub::accept(uint32_t client, uroce::QueuePair* qp, const CmAcceptReq& req) {
  if (!cm_ || !owns(client, req.id)) return EINVAL;
  const auto p = param_of(req.param);
  if (req.ud) {
    // The session checked the QP the client named (its handle, or else its
    // number): the reply offers that QP, never a number sent beside a handle.
    const int err = cm_->accept_ud(req.id, qp ? qp->qp_num() : req.qpn, req.qkey, p.private_data);
    if (err == 0) disown(req.id);  // answered: the manager forgets the request
    return err;
  }
  return qp ? cm_->accept(req.id, *qp, p) : cm_->accept(req.id, req.qpn, p);
}

int CmHub::id_op(uint32_t client, const CmIdReq& req) {
  if (!cm_ || !owns(client, req.id)) return EINVAL;
  switch (req.what) {
    case CmIdOp::establish:
      return cm_->establish(req.id);
    case CmIdOp::disconnect:
      return cm_->disconnect(req.id);
    case CmIdOp::release:
      disown(req.id);
      return cm_->release(req.id);
    case CmIdOp::reject: {
      const uint32_t n = std::min<uint32_t>(req.private_data_len, kCmPrivateData);
      const int err = cm_->reject(req.id, {req.private_data, n});
      if (err == 0) disown(req.id);  // the manager forgets a request it rejected
      return err;
    }
  }
  return EINVAL;
}

int CmHub::qp_attr(uint32_t client, uint64_t id, ibv_qp_attr& attr, int& mask) {
  if (!cm_ || !owns(client, id)) return EINVAL;
  return cm_->qp_attr(id, attr, mask);
}

void CmHub::detach_qp(const uroce::QueuePair& qp) {
  if (cm_) cm_->detach_qp(qp);
}

void CmHub::forget(uint32_t client) {
  if (!cm_) return;
  std::vector<uint64_t> ids;
  for (const auto& [id, c] : owner_)
    if (c == client) ids.push_back(id);
  for (uint64_t id : ids) {
    disown(id);
    cm_->release(id);
  }
  ids_.erase(client);
  for (auto it = ports_.begin(); it != ports_.end();) {
    if (it->second != client) {
      ++it;
      continue;
    }
    it->first.first ? cm_->stop_listening_ud(it->first.second) : cm_->stop_listening(it->first.second);
    it = ports_.erase(it);
  }
}

}  // namespace uroced
