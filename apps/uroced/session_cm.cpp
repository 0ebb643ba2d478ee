// SPDX-License-Identifier: BSD-3-Clause
// A client's calls to the daemon's connection manager (CmHub) and its
// neighbour table. Every QP a call names is the client's own, every
// connection id one the client made or was handed (CmHub checks).
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "log.h"
#include "session.h"

namespace uroced {
namespace {

using namespace uroce::daemon;

// Addresses one client may have the daemon resolve.
constexpr size_t kNeighborsPerClient = 1024;

void fill(const uroce::cm::Event& e, uint32_t remaining, CmEventRep& rep) {
  rep.remaining = remaining;
  rep.type = uint32_t(e.type);
  rep.id = e.id;
  rep.status = e.status;
  rep.private_data_len = uint32_t(std::min(e.private_data.size(), sizeof rep.private_data));
  std::copy_n(e.private_data.begin(), rep.private_data_len, rep.private_data);
  std::copy(e.local.bytes.begin(), e.local.bytes.end(), rep.local);
  std::copy(e.peer.bytes.begin(), e.peer.bytes.end(), rep.peer);
  rep.port = e.port;
  rep.peer_port = e.peer_port;
  rep.peer_qpn = e.peer_qpn;
  rep.qkey = e.qkey;
  rep.responder_resources = e.responder_resources;
  rep.initiator_depth = e.initiator_depth;
  rep.ud = e.ud;
  rep.flow_control = e.flow_control;
}

}  // namespace

uroce::QueuePair* Session::own_qp(uint32_t handle) {
  auto it = qps_.find(handle);
  return it == qps_.end() ? nullptr : it->second.qp.get();
}

// A QP named by its number (one the client moves itself) must be the
// client's own: a REQ or REP must never offer another client's QP.
bool Session::owns_qpn(uint32_t qpn) const {
  for (const auto& [h, qp] : qps_)
    if (qp.qp->qp_num() == qpn) return true;
  return false;
}

void Session::dispatch_cm(Op op, const void* msg, size_t len) {
  auto sized = [&](size_t want) { return len == want; };
  switch (op) {
    case Op::cm_open: {
      auto rep = make_message<HandleRep>(op);
      std::string error;
      int fd = -1;
      if (!sized(sizeof(AllocPdReq))) {
        rep.h.status = EINVAL;
      } else if ((rep.h.status = cm_.open(error)) != 0) {
        UROCED_LOG(ERR, "client %u: the connection manager: %s", id_, error.c_str());
      } else if ((fd = inbox_.open()) < 0) {
        rep.h.status = errno;
      }
      reply(&rep, sizeof rep, rep.h.status == 0 ? fd : -1);
      if (fd >= 0) close(fd);  // the client has its copy
      return;
    }
    case Op::cm_listen: {
      auto rep = make_message<HandleRep>(op);
      rep.h.status = !sized(sizeof(CmListenReq)) || !inbox_.opened()
                         ? EINVAL
                         : cm_.listen(id_, peer_.uid, *static_cast<const CmListenReq*>(msg));
      reply(&rep, sizeof rep);
      return;
    }
    case Op::cm_connect: {
      auto rep = make_message<CmIdRep>(op);
      const auto* req = static_cast<const CmConnectReq*>(msg);
      uroce::QueuePair* qp = sized(sizeof(CmConnectReq)) && req->qp ? own_qp(req->qp) : nullptr;
      if (!sized(sizeof(CmConnectReq)) || !inbox_.opened() || (req->qp && !qp) ||
          (!req->qp && !req->ud && !owns_qpn(req->qpn)))
        rep.h.status = EINVAL;
      else rep.h.status = cm_.connect(id_, qp, *req, rep.id);
      reply(&rep, sizeof rep);
      return;
    }
    case Op::cm_accept: {
      auto rep = make_message<HandleRep>(op);
      const auto* req = static_cast<const CmAcceptReq*>(msg);
      uroce::QueuePair* qp = sized(sizeof(CmAcceptReq)) && req->qp ? own_qp(req->qp) : nullptr;
      if (!sized(sizeof(CmAcceptReq)) || (req->qp && !qp) || (!req->qp && !owns_qpn(req->qpn))) rep.h.status = EINVAL;
      else rep.h.status = cm_.accept(id_, qp, *req);
      reply(&rep, sizeof rep);
      return;
    }
    case Op::cm_id_op: {
      auto rep = make_message<HandleRep>(op);
      rep.h.status = sized(sizeof(CmIdReq)) ? cm_.id_op(id_, *static_cast<const CmIdReq*>(msg)) : EINVAL;
      reply(&rep, sizeof rep);
      return;
    }
    case Op::cm_qp_attr: {
      auto rep = make_message<CmQpAttrRep>(op);
      int mask = 0;
      if (sized(sizeof(CmIdReq))) {
        const auto* req = static_cast<const CmIdReq*>(msg);
        rep.attr.qp_state = ibv_qp_state(req->qp_state);
        rep.h.status = cm_.qp_attr(id_, req->id, rep.attr, mask);
      } else {
        rep.h.status = EINVAL;
      }
      rep.mask = mask;
      reply(&rep, sizeof rep);
      return;
    }
    case Op::cm_get_event: {
      auto rep = make_message<CmEventRep>(op);
      uroce::cm::Event e;
      if (!sized(sizeof(AllocPdReq))) rep.h.status = EINVAL;
      else if (!inbox_.pop(e)) rep.h.status = EAGAIN;
      else fill(e, uint32_t(inbox_.size()), rep);
      reply(&rep, sizeof rep);
      return;
    }
    case Op::neighbor: {
      auto rep = make_message<NeighborRep>(op);
      if (!sized(sizeof(NeighborReq))) {
        rep.h.status = EINVAL;
      } else {
        const auto* req = static_cast<const NeighborReq*>(msg);
        uroce::wire::IpAddr ip;
        std::copy(req->ip, req->ip + 16, ip.bytes.begin());
        uroce::wire::MacAddr mac;
        if (device_.neighbor_mac(ip, mac)) {
          rep.state = uint32_t(uroce::NeighborState::reachable);
          rep.reachable = 1;
          std::copy(mac.bytes.begin(), mac.bytes.end(), rep.mac);
        } else if (!req->start) {
          rep.state = uint32_t(uroce::NeighborState::resolving);
        } else if (asked_.size() >= kNeighborsPerClient && !asked_.count(ip.bytes)) {
          // Each address asked for is an entry in the port's table and ARP
          // or ND on the wire: a client gets a bounded number.
          rep.h.status = ENOMEM;
        } else {
          asked_.insert(ip.bytes);
          rep.state = uint32_t(device_.resolve_neighbor(ip));
        }
      }
      reply(&rep, sizeof rep);
      return;
    }
    default:
      return;
  }
}

}  // namespace uroced
