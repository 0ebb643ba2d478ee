// SPDX-License-Identifier: BSD-3-Clause
// The out-of-band TCP connection that RDMA tools use to swap QP numbers,
// PSNs, keys and GIDs before any RoCE packet flows (ibv_rc_pingpong and
// perftest both use one). Blocking calls with a deadline; while a call
// waits it keeps calling `idle` so the caller's engine keeps polling
// (answering ARP, retransmitting) instead of stalling.
//
// A timeout of 0 means "no deadline" for every call. Without an idle
// callback a call sleeps in the kernel while it waits; with one it polls
// the socket and calls `idle` in a loop (busy-poll, like the engine).
// One thread at a time per object; distinct channels and listeners are
// independent of each other (each has its own Boost.Asio io_context).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "uroce/exchange/channel.h"

namespace uroce::exchange {

using Idle = std::function<void()>;

class TcpListener;

class TcpChannel final : public Channel {
 public:
  // Client: connects to host:port (a name or an IPv4/IPv6 literal),
  // retrying refused connections until `timeout` (the server may start a
  // moment later). nullptr and a message naming the peer and the reason on
  // failure.
  static std::unique_ptr<TcpChannel> connect(const std::string& host, uint16_t port, Millis timeout,
                                             const Idle& idle, std::string& error);
  // Server: listens on `port` (all addresses, SO_REUSEADDR) and accepts one
  // client; timeout 0 waits forever. TcpListener splits the two steps (and
  // tells the port when `port` is 0).
  static std::unique_ptr<TcpChannel> accept(uint16_t port, Millis timeout, const Idle& idle, std::string& error);
  ~TcpChannel() override;
  TcpChannel(const TcpChannel&) = delete;
  TcpChannel& operator=(const TcpChannel&) = delete;

  // Exactly n bytes, within the channel's timeout; false and a message
  // (peer closed, timed out after N ms waiting for K bytes, ...) otherwise.
  bool send(const void* data, size_t n, std::string& error) override;
  bool recv(void* data, size_t n, std::string& error) override;
  // As recv, but a peer that closes the connection cleanly before sending
  // a single byte is not an error: true with `eof` set. For optional
  // trailers such as perftest's "done" (some versions do not send it).
  bool recv_or_eof(void* data, size_t n, bool& eof, std::string& error) override;

  // The last step of a conversation: says "nothing more from me" (shuts
  // down the sending side) and waits, without the idle callback, until the
  // peer does the same (closes, or shuts down its side) or `timeout`
  // passes; bytes that still arrive are discarded. Two processes that stop
  // polling their ports before they linger know, when it returns, that
  // neither polls any more: a shared-memory link (memif) can then be torn
  // down without the other side still inside it. False on timeout.
  bool linger(Millis timeout) override;

  // Without waiting: the peer has closed or shut down its side, or the
  // connection failed. For a side whose run shows no sign of the peer
  // (frames that leave whether anyone receives them or not): a process
  // that dies closes its sockets.
  bool peer_closed() const override;
  // Without waiting: bytes from the peer wait to be read (or it closed).
  // For a side busy with RDMA that expects nothing on the channel now: a
  // peer that talks is at another step (runs another test).
  bool peer_spoke() const override;

  void set_timeout(Millis timeout) override { timeout_ = timeout; }
  Millis timeout() const override { return timeout_; }
  void set_idle(const Idle& idle) { idle_ = idle; }
  // "10.0.0.2:18515" ("[fe80::1]:18515" for IPv6), for messages.
  const std::string& peer() const override { return peer_; }

  struct Impl;

 private:
  friend class TcpListener;
  TcpChannel(std::unique_ptr<Impl> impl, std::string peer, const Idle& idle);
  bool receive(void* data, size_t n, bool eof_ok, bool& eof, std::string& error);
  std::unique_ptr<Impl> impl_;
  std::string peer_;
  Idle idle_;
  Millis timeout_{10000};
};

// The listening half of TcpChannel::accept, for servers that must know the
// port before the client connects (port 0 = an ephemeral port).
class TcpListener {
 public:
  // Binds [::]:port dual-stack (IPv4 clients arrive as ::ffff:a.b.c.d),
  // or 0.0.0.0:port where IPv6 is unavailable; SO_REUSEADDR.
  static std::unique_ptr<TcpListener> listen(uint16_t port, std::string& error);
  ~TcpListener();
  TcpListener(const TcpListener&) = delete;
  TcpListener& operator=(const TcpListener&) = delete;

  // The bound port (the kernel's choice when listen() was given 0).
  uint16_t port() const { return port_; }
  // One client; timeout 0 waits forever. Can be called again for the next.
  std::unique_ptr<TcpChannel> accept(Millis timeout, const Idle& idle, std::string& error);
  // Stops listening: the kernel refuses later clients (ECONNREFUSED), as
  // perftest's and rc_pingpong's servers do once they have their client,
  // instead of leaving them in the backlog until the run ends. Channels
  // already accepted stay; accept() fails from then on.
  void close();

  struct Impl;

 private:
  TcpListener(std::unique_ptr<Impl> impl, uint16_t port);
  std::unique_ptr<Impl> impl_;
  uint16_t port_ = 0;
};

}  // namespace uroce::exchange
