// SPDX-License-Identifier: BSD-3-Clause
// The connection manager of the daemon's port, shared by its clients: one
// uroce::cm::ConnectionManager on the port's QP1, its ports and
// connections each owned by the client that listened or connected, its
// events queued for their owner (docs/daemon.md, "The connection
// manager"). Listening on a port another client listens on is EADDRINUSE,
// as between two processes on Linux; a client that ends loses its ports,
// and its connections are released (REJ or DREQ to the peer).
#pragma once

#include <sys/socket.h>

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>

#include "daemon/protocol.h"
#include "uroce/cm/connection_manager.h"
#include "uroce/verbs/verbs.h"

namespace uroced {

// One client's side: its queue of events, and a pipe whose read end the
// client holds, readable while events wait. The daemon writes a byte per
// event it queues, and one more when it hands out an event with others
// behind it (the client drains the pipe before it asks); its end never
// blocks, and the client cannot write to it (an eventfd shared between
// the two would let the client make the daemon's write block).
class CmInbox {
 public:
  ~CmInbox();
  // The read end for the client (made at the first cm_open), or -1 with
  // errno. The session keeps no copy: a write with the reader gone fails.
  int open();
  bool opened() const { return write_fd_ >= 0; }
  void push(uroce::cm::Event e);
  bool pop(uroce::cm::Event& e);
  size_t size() const { return events_.size(); }

 private:
  void signal();
  int write_fd_ = -1;
  std::deque<uroce::cm::Event> events_;
};

class CmHub {
 public:
  explicit CmHub(uroce::Device& device) : device_(device) {}
  // Opens the manager on first use; 0 or an errno with `error` set.
  int open(std::string& error);
  // The manager's event descriptor for the service thread's epoll; -1 until open.
  int event_fd() const { return cm_ ? cm_->event_fd() : -1; }
  // Hands each event to its owner's inbox (`inbox` finds a client's, null
  // once it is gone); a request for a port whose owner is gone or whose
  // inbox is full is rejected.
  void dispatch(const std::function<CmInbox*(uint32_t)>& inbox);

  // The calls of client `client`, checked: an id must be the client's,
  // a QP its own (the caller resolves its handles). `uid` decides ports
  // below 1024 (root only, as Linux's rdma_cm asks CAP_NET_BIND_SERVICE).
  int listen(uint32_t client, uid_t uid, const uroce::daemon::CmListenReq& req);
  int connect(uint32_t client, uroce::QueuePair* qp, const uroce::daemon::CmConnectReq& req, uint64_t& id);
  int accept(uint32_t client, uroce::QueuePair* qp, const uroce::daemon::CmAcceptReq& req);
  int id_op(uint32_t client, const uroce::daemon::CmIdReq& req);
  int qp_attr(uint32_t client, uint64_t id, ibv_qp_attr& attr, int& mask);
  // Before the daemon destroys one of its clients' QPs.
  void detach_qp(const uroce::QueuePair& qp);
  // A client that ends: its requests rejected, its connections
  // disconnected, its ports closed.
  void forget(uint32_t client);

 private:
  bool owns(uint32_t client, uint64_t id) const;
  void own(uint64_t id, uint32_t client);
  size_t count(uint32_t client) const;
  void disown(uint64_t id);
  uroce::Device& device_;
  std::unique_ptr<uroce::cm::ConnectionManager> cm_;
  std::unordered_map<uint64_t, uint32_t> owner_;         // connection id -> client
  std::unordered_map<uint32_t, size_t> ids_;             // client -> connections it owns
  std::map<std::pair<bool, uint16_t>, uint32_t> ports_;  // (UDP port space, port) -> client
};

}  // namespace uroced
