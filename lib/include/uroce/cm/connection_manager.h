// SPDX-License-Identifier: BSD-3-Clause
// Connections set up on the wire by the InfiniBand Communication Manager,
// as Linux's rdma_cm does it over RoCE (docs/cm.md): a listener on a port,
// connect(address, port, private data), REQ/REP/RTU, REJ, DREQ/DREP. The
// manager owns the device's QP1 and a thread of its own that sleeps until
// a CM message, a timer or a call needs it; the application learns of
// requests, established connections, rejections and disconnections from
// get_event(), or by watching event_fd() (poll, epoll, Boost.Asio).
//
// The device must run its engine on its own thread
// (Device::start_engine_thread) before open(). The RC QPs handed to
// connect() and accept() must be in the RESET or INIT state; the manager moves
// them to RTS with the attributes the CM exchange settles (path MTU, PSNs,
// read/atomic depths, timeouts, retry counts), as rdma_init_qp_attr does.
#pragma once

#include "uroce/api.h"

#include <infiniband/verbs.h>

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "uroce/wire/ip_addr.h"

namespace uroce {

class Device;
class QueuePair;

namespace cm {

enum class EventType : uint8_t {
  connect_request,  // a REQ reached a listening port: accept() or reject() it
  established,      // the QP is in RTS, and so is the peer's
  rejected,         // the peer answered REJ: status is its reason (8: no listener, 28: the application)
  unreachable,      // no answer within the CM's retries (status -ETIMEDOUT)
  disconnected,     // a DREQ or DREP: the QP is in the error state
  connect_error,    // the QP could not be brought to RTS (status: the errno)
  // The REP to a connect() by QP number: move the QP with qp_attr(), then
  // establish() sends the RTU. No established event follows.
  connect_response,
};

struct Event {
  EventType type{};
  uint64_t id = 0;  // the connection it is about
  int status = 0;
  // The peer's private data: a REQ's after rdma_cm's header (56 bytes), a
  // REP's (196), a REJ's (148). The full field, zero-padded, as Linux
  // reports it.
  std::vector<uint8_t> private_data;
  // connect_request: where it came from and what it asks for. The depths
  // are as this side should take them: responder_resources is the peer's
  // initiator depth.
  uint16_t port = 0;  // the local port it was sent to
  wire::IpAddr local{};  // the local address it was sent to
  wire::IpAddr peer{};
  uint16_t peer_port = 0;
  uint32_t peer_qpn = 0;
  uint8_t responder_resources = 0;
  uint8_t initiator_depth = 0;
  // A UD port's (rdma_cm's UDP port space; service ID resolution, SIDR):
  // connect_request from a SIDR REQ, established for the SIDR REP that
  // names the peer's UD QP (peer_qpn, qkey), rejected with the SIDR status
  // (1 no such service, 2 refused, ...) for one that does not.
  bool ud = false;
  uint32_t qkey = 0;
  // connect_request, established: the peer's end-to-end flow control flag
  // (its REQ's or REP's), which rdma_cm reports and the CM never acts on.
  bool flow_control = false;
};

struct ConnParam {
  // connect: up to 56 bytes; accept: up to 196.
  std::vector<uint8_t> private_data;
  uint8_t responder_resources = 0;  // this side's max_dest_rd_atomic (0: no READ or atomics served)
  uint8_t initiator_depth = 0;      // this side's max_rd_atomic
  uint8_t retry_count = 7;
  uint8_t rnr_retry_count = 7;
  // The REQ's or REP's end-to-end flow control flag: the application's
  // (rdma_conn_param.flow_control), carried as Linux carries it.
  bool flow_control = false;
  // connect: the active side's port in rdma_cm's header (and the flow
  // label); 0 picks one from Linux's ephemeral range.
  uint16_t local_port = 0;
};

// An event that ends a connection or an attempt at one, in words for a
// program's message: "the server refused the connection: nobody listens
// on that port (REJ reason 8)", no answer within the CM's retries, a QP
// that could not be connected, a disconnection.
UROCE_API std::string describe(const Event& e);

class UROCE_API ConnectionManager {
 public:
  // nullptr and a message when the device runs no engine thread or
  // already has a manager (QP1 is taken). On a client of uroced the
  // manager is the daemon's, shared by all its clients: each call goes to
  // it, and a port one client listens on is taken for the others.
  static std::unique_ptr<ConnectionManager> open(Device& device, std::string& error);
  ~ConnectionManager();
  ConnectionManager(const ConnectionManager&) = delete;
  ConnectionManager& operator=(const ConnectionManager&) = delete;

  // Accept REQs for `port` (rdma_cm's TCP port space). 0, or EADDRINUSE.
  int listen(uint16_t port);
  int stop_listening(uint16_t port);

  // Sends a REQ for `qp` to `peer`'s `port`; `id` names the connection in
  // the events that follow. EINVAL for a QP that is not RC or UC or not in
  // RESET or INIT, private data over 56 bytes, or an address of a family
  // the device has no GID for.
  int connect(QueuePair& qp, const wire::IpAddr& peer, uint16_t port, const ConnParam& param, uint64_t& id);
  // Answers a connect_request: moves `qp` to RTS and sends the REP;
  // established follows the peer's RTU. EINVAL for an unknown id.
  int accept(uint64_t id, QueuePair& qp, const ConnParam& param);
  // The same for a QP the application moves itself (librdmacm's ids
  // without a QP: rdma_init_qp_attr, rdma_establish). The manager knows
  // only its number and never touches it: connect_response follows the
  // REP, and the RTU waits for establish(); the passive side's established
  // follows the RTU as before. EINVAL as above, or for a QPN out of range.
  int connect(uint32_t qpn, ibv_qp_type type, const wire::IpAddr& peer, uint16_t port, const ConnParam& param,
              uint64_t& id);
  int accept(uint64_t id, uint32_t qpn, const ConnParam& param);
  // After connect_response: sends the RTU. EINVAL in any other state.
  int establish(uint64_t id);
  // The attributes that move the connection's QP to attr.qp_state (INIT,
  // RTR or RTS) and their mask, as Linux's ib_cm_init_qp_attr gives them:
  // the passive side's from the REQ on (the depths as the REQ asks them),
  // the active side's RTR and RTS once the REP came. EINVAL otherwise.
  int qp_attr(uint64_t id, ibv_qp_attr& attr, int& mask);
  // Service ID resolution for UD ports (SIDR): listen_ud takes the SIDR
  // REQs for `port` (EADDRINUSE twice); resolve_service asks `peer` which
  // UD QP serves `port` (up to 180 bytes of private data after rdma_cm's
  // header), answered by established, rejected or unreachable (Event::ud);
  // accept_ud answers a UD connect_request with `qpn` and `qkey` and up to
  // 136 bytes; reject() answers one with status 2. Either way the request
  // is then forgotten: no connection follows.
  int listen_ud(uint16_t port);
  int stop_listening_ud(uint16_t port);
  int resolve_service(const wire::IpAddr& peer, uint16_t port, const ConnParam& param, uint64_t& id);
  int accept_ud(uint64_t id, uint32_t qpn, uint32_t qkey, std::span<const uint8_t> private_data);
  // Answers a connect_request with REJ reason 28 and up to 148 bytes.
  int reject(uint64_t id, std::span<const uint8_t> private_data);
  // Moves the QP to the error state and sends a DREQ; disconnected
  // follows the peer's DREP (or its DREQ). 0 without effect when the
  // connection is already being disconnected.
  int disconnect(uint64_t id);
  // `qp` is about to be destroyed: the manager no longer touches it, in
  // whichever connection it serves.
  void detach_qp(const QueuePair& qp);
  // The application forgets the connection: a request not yet answered is
  // rejected (reason 28), an established connection disconnected, and no
  // event names `id` any more. The QP is detached first.
  int release(uint64_t id);
  // Waits until the MADs already posted (a release's DREQ or REJ) have left
  // through the port and every DREQ is answered (its DREQ sent again
  // meanwhile, as the kernel's CM would go on doing after the process),
  // for at most timeout_ms: what a process that is about to end calls after
  // its releases. 0, or ETIMEDOUT. Through uroced, 0 at once: the daemon
  // sends them, and outlives the process.
  int flush_sends(int timeout_ms);

  // Readable while get_event() has an event.
  int event_fd() const;
  // The oldest event not yet taken, without blocking; false if none.
  bool get_event(Event& out);

 private:
  struct Impl;
  explicit ConnectionManager(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
  std::unique_ptr<class RemoteManager> remote_;  // on a client of uroced: the daemon's manager
};

}  // namespace cm
}  // namespace uroce
