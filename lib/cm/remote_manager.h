// SPDX-License-Identifier: BSD-3-Clause
// Internal: ConnectionManager on a client of uroced. The manager runs in
// the daemon, on its port's QP1, for all its clients (listeners arbitrate
// ports across them); each call here is one request on the daemon socket,
// naming QPs by the daemon's handles, and the events come back one request
// at a time, announced by a pipe the daemon writes (docs/daemon.md).
#pragma once

#include <memory>
#include <mutex>
#include <span>
#include <string>

#include "uroce/cm/connection_manager.h"

namespace uroce::client {
class Connection;
}

namespace uroce::cm {

class RemoteManager {
 public:
  // nullptr and a message when the daemon has no manager to offer.
  static std::unique_ptr<RemoteManager> open(client::Connection& conn, std::string& error);
  ~RemoteManager();

  int listen(uint16_t port, bool ud, bool on);
  int connect(const QueuePair* qp, uint32_t qpn, ibv_qp_type type, const wire::IpAddr& peer, uint16_t port,
              const ConnParam& p, bool ud, uint64_t& id);
  int accept(uint64_t id, const QueuePair* qp, uint32_t qpn, uint32_t qkey, bool ud, const ConnParam& p);
  int establish(uint64_t id);
  int disconnect(uint64_t id);
  int release(uint64_t id);
  int reject(uint64_t id, std::span<const uint8_t> private_data);
  int qp_attr(uint64_t id, ibv_qp_attr& attr, int& mask);
  int event_fd() const { return efd_; }  // the read end of the daemon's pipe
  bool get_event(Event& out);

 private:
  RemoteManager(client::Connection& conn, int efd) : conn_(conn), efd_(efd) {}
  int id_op(uint64_t id, uint32_t what, std::span<const uint8_t> data);
  client::Connection& conn_;
  int efd_;
  std::mutex mu_;  // get_event's clear-then-ask
};

}  // namespace uroce::cm
