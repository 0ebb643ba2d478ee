// SPDX-License-Identifier: BSD-3-Clause
#include "remote_manager.h"

#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "daemon/protocol.h"
#include "uroce/client/daemon_client.h"
#include "verbs/access.h"

namespace uroce::cm {
namespace {

using namespace uroce::daemon;

// EINVAL before the daemon hears of it: what the in-process manager refuses too.
int to_param(const ConnParam& p, CmParam& out) {
  if (p.private_data.size() > kCmPrivateData) return EINVAL;
  std::copy(p.private_data.begin(), p.private_data.end(), out.private_data);
  out.private_data_len = uint32_t(p.private_data.size());
  out.responder_resources = p.responder_resources;
  out.initiator_depth = p.initiator_depth;
  out.retry_count = p.retry_count;
  out.rnr_retry_count = p.rnr_retry_count;
  out.flow_control = p.flow_control ? 1 : 0;
  out.local_port = p.local_port;
  return 0;
}

// The QP's daemon handle; 0 for a QP of another device.
uint32_t handle_of(const QueuePair* qp) {
  const client::QueuePair* r = qp ? detail::Access::remote(*qp) : nullptr;
  return r ? r->handle() : 0;
}

}  // namespace

std::unique_ptr<RemoteManager> RemoteManager::open(client::Connection& conn, std::string& error) {
  auto req = make_message<AllocPdReq>(Op::cm_open);
  HandleRep rep{};
  int fd = -1;
  if (const int err = conn.call(&req, sizeof req, &rep, sizeof rep, -1, &fd)) {
    if (fd >= 0) close(fd);
    error = err == EOPNOTSUPP ? "uroced runs no connection manager (an older daemon?)"
                              : "uroced's connection manager: " + std::string(std::strerror(err));
    return nullptr;
  }
  if (fd < 0) return error = "uroced sent no event descriptor for the connection manager", nullptr;
  return std::unique_ptr<RemoteManager>(new RemoteManager(conn, fd));
}

RemoteManager::~RemoteManager() {
  if (efd_ >= 0) close(efd_);
}

int RemoteManager::listen(uint16_t port, bool ud, bool on) {
  auto req = make_message<CmListenReq>(Op::cm_listen);
  req.port = port;
  req.ud = ud;
  req.on = on;
  HandleRep rep{};
  return conn_.call(&req, sizeof req, &rep, sizeof rep);
}

int RemoteManager::connect(const QueuePair* qp, uint32_t qpn, ibv_qp_type type, const wire::IpAddr& peer,
                           uint16_t port, const ConnParam& p, bool ud, uint64_t& id) {
  auto req = make_message<CmConnectReq>(Op::cm_connect);
  if (qp && !(req.qp = handle_of(qp))) return EINVAL;
  req.qpn = qpn;
  req.qp_type = uint32_t(type);
  req.port = port;
  req.ud = ud;
  std::copy(peer.bytes.begin(), peer.bytes.end(), req.peer);
  if (to_param(p, req.param)) return EINVAL;
  CmIdRep rep{};
  const int err = conn_.call(&req, sizeof req, &rep, sizeof rep);
  if (err == 0) id = rep.id;
  return err;
}

int RemoteManager::accept(uint64_t id, const QueuePair* qp, uint32_t qpn, uint32_t qkey, bool ud,
                          const ConnParam& p) {
  auto req = make_message<CmAcceptReq>(Op::cm_accept);
  req.id = id;
  if (qp && !(req.qp = handle_of(qp))) return EINVAL;
  req.qpn = qpn;
  req.qkey = qkey;
  req.ud = ud;
  if (to_param(p, req.param)) return EINVAL;
  HandleRep rep{};
  return conn_.call(&req, sizeof req, &rep, sizeof rep);
}

int RemoteManager::id_op(uint64_t id, uint32_t what, std::span<const uint8_t> data) {
  auto req = make_message<CmIdReq>(Op::cm_id_op);
  if (data.size() > kCmPrivateData) return EINVAL;
  req.id = id;
  req.what = CmIdOp(what);
  req.private_data_len = uint32_t(data.size());
  std::copy(data.begin(), data.end(), req.private_data);
  HandleRep rep{};
  return conn_.call(&req, sizeof req, &rep, sizeof rep);
}

int RemoteManager::establish(uint64_t id) { return id_op(id, uint32_t(CmIdOp::establish), {}); }
int RemoteManager::disconnect(uint64_t id) { return id_op(id, uint32_t(CmIdOp::disconnect), {}); }
int RemoteManager::release(uint64_t id) { return id_op(id, uint32_t(CmIdOp::release), {}); }
int RemoteManager::reject(uint64_t id, std::span<const uint8_t> data) {
  return id_op(id, uint32_t(CmIdOp::reject), data);
}

int RemoteManager::qp_attr(uint64_t id, ibv_qp_attr& attr, int& mask) {
  auto req = make_message<CmIdReq>(Op::cm_qp_attr);
  req.id = id;
  req.qp_state = uint32_t(attr.qp_state);
  CmQpAttrRep rep{};
  const int err = conn_.call(&req, sizeof req, &rep, sizeof rep);
  if (err == 0) {
    attr = rep.attr;
    mask = rep.mask;
  }
  return err;
}

// The pipe is readable while events wait: drained before asking; the
// daemon writes to it again for an event queued meanwhile, and when the
// one it hands out has others behind it.
bool RemoteManager::get_event(Event& out) {
  std::lock_guard<std::mutex> lock(mu_);
  char drain[256];
  pollfd p{efd_, POLLIN, 0};
  while (::poll(&p, 1, 0) > 0 && (p.revents & POLLIN) && read(efd_, drain, sizeof drain) > 0) {
  }
  auto req = make_message<AllocPdReq>(Op::cm_get_event);
  CmEventRep rep{};
  if (conn_.call(&req, sizeof req, &rep, sizeof rep) != 0) return false;
  Event e;
  e.type = EventType(rep.type);
  e.id = rep.id;
  e.status = rep.status;
  const uint32_t n = std::min<uint32_t>(rep.private_data_len, sizeof rep.private_data);
  e.private_data.assign(rep.private_data, rep.private_data + n);
  std::copy(rep.local, rep.local + 16, e.local.bytes.begin());
  std::copy(rep.peer, rep.peer + 16, e.peer.bytes.begin());
  e.port = rep.port;
  e.peer_port = rep.peer_port;
  e.peer_qpn = rep.peer_qpn;
  e.qkey = rep.qkey;
  e.responder_resources = rep.responder_resources;
  e.initiator_depth = rep.initiator_depth;
  e.ud = rep.ud != 0;
  e.flow_control = rep.flow_control != 0;
  out = std::move(e);
  return true;
}

}  // namespace uroce::cm
