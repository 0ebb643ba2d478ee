// SPDX-License-Identifier: BSD-3-Clause
// -R (perftest's rdma_cm mode): connections set up by the connection
// manager on the wire instead of QP records swapped over TCP. CmLink
// owns the device's manager and sorts its events by connection; CmChannel
// is the conversation perftest -R holds over SENDs on an RC QP of its own,
// connected to the same port as the test's QPs (docs/exchange.md).
#pragma once

#include <deque>
#include <functional>
#include <memory>
#include <set>
#include <string>

#include "uroce/cm/connection_manager.h"
#include "uroce/exchange/channel.h"
#include "uroce/verbs/verbs.h"

namespace uroce::perf {

using exchange::Millis;

class CmLink {
 public:
  // The device's engine runs on its own thread already.
  static std::unique_ptr<CmLink> open(Device& dev, std::string& error);
  cm::ConnectionManager& manager() { return *m_; }

  // The next event `want` accepts, within `timeout` (0: none), calling
  // `idle` while it waits (the watchdog); events of other connections
  // wait for their own turn. False and a message on timeout.
  bool wait(const std::function<bool(const cm::Event&)>& want, Millis timeout, const std::function<void()>& idle,
            cm::Event& out, std::string& error);
  // Connection `id` has been disconnected (a DREQ or DREP came).
  bool disconnected(uint64_t id);

  // Client: connects `qp` to `peer`:`port` and waits for it to be
  // established. Server: the next connection request on the port the link
  // listens on, accepted with `qp`. The QP ends in RTS; `id` names the
  // connection.
  bool connect(QueuePair& qp, const wire::IpAddr& peer, uint16_t port, const cm::ConnParam& p, Millis timeout,
               const std::function<void()>& idle, uint64_t& id, std::string& error);
  bool accept(QueuePair& qp, const cm::ConnParam& p, Millis request_timeout, Millis timeout,
              const std::function<void()>& idle, uint64_t& id, wire::IpAddr& peer, std::string& error);
  // Sends a DREQ unless the peer's came first, and waits (up to
  // `timeout`) for the connection to be down.
  void disconnect(uint64_t id, Millis timeout);

 private:
  void pump();
  std::unique_ptr<cm::ConnectionManager> m_;
  std::deque<cm::Event> queued_;
  std::set<uint64_t> down_;
};

// perftest -R's conversation: each step one SEND of exactly its bytes.
class CmChannel final : public exchange::Channel {
 public:
  // An RC QP with its CQs and buffers, receives posted, not yet connected.
  static std::unique_ptr<CmChannel> create(Device& dev, CmLink& link, std::string& error);
  ~CmChannel() override;

  QueuePair& qp() { return *qp_; }
  // The QP to RESET and INIT, every receive posted: ready for a
  // connection (again, after a refused one).
  bool reset();
  // The QP is connected as connection `id` to `peer` (for messages).
  void connected(uint64_t id, const std::string& peer) {
    id_ = id;
    peer_ = peer;
  }
  void set_idle(const std::function<void()>& idle) { idle_ = idle; }

  bool send(const void* data, size_t n, std::string& error) override;
  bool recv(void* data, size_t n, std::string& error) override;
  bool recv_or_eof(void* data, size_t n, bool& eof, std::string& error) override;
  // Disconnects (DREQ/DREP) and waits for the peer's side to be down.
  bool linger(Millis timeout) override;
  bool peer_closed() const override;
  bool peer_spoke() const override;
  void set_timeout(Millis timeout) override { timeout_ = timeout; }
  Millis timeout() const override { return timeout_; }
  const std::string& peer() const override { return peer_; }

 private:
  CmChannel() = default;
  // One receive completion (stashed by peer_spoke), or none by the deadline.
  bool next_recv(ibv_wc& wc, bool& eof, std::string& error);
  bool repost(uint64_t slot);
  CmLink* link_ = nullptr;
  Device* dev_ = nullptr;
  std::unique_ptr<ProtectionDomain> pd_;
  std::unique_ptr<CompletionQueue> scq_, rcq_;
  std::unique_ptr<MemoryRegion> mr_;
  std::unique_ptr<QueuePair> qp_;
  uint64_t id_ = 0;
  std::string peer_ = "the peer";
  std::function<void()> idle_;
  Millis timeout_{10000};
  mutable bool stashed_ = false;
  mutable ibv_wc stash_{};
};

}  // namespace uroce::perf
