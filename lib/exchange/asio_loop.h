// SPDX-License-Identifier: BSD-3-Clause
// Internal: the Boost.Asio objects behind TcpChannel/TcpListener and the
// loop that waits for one asynchronous operation while calling `idle`.
#pragma once

// Boost 1.74's asio/awaitable.hpp uses std::exchange without including
// <utility>; with C++20 coroutines enabled it is compiled, so include it first.
#include <utility>

#include <boost/asio.hpp>
#include <chrono>
#include <memory>
#include <string>

#include "uroce/exchange/tcp_channel.h"

namespace uroce::exchange {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

// Each channel and listener has its own io_context (the socket is
// declared after it, so it is destroyed first).
struct TcpChannel::Impl {
  std::shared_ptr<asio::io_context> io;
  tcp::socket sock;

  Impl(std::shared_ptr<asio::io_context> ctx, tcp::socket s) : io(std::move(ctx)), sock(std::move(s)) {}
};

struct TcpListener::Impl {
  std::shared_ptr<asio::io_context> io = std::make_shared<asio::io_context>(1);
  tcp::acceptor acceptor{*io};
};

namespace detail {

using Clock = std::chrono::steady_clock;

struct Deadline {
  bool forever = true;
  Clock::time_point at{};

  static Deadline after(Millis timeout) {
    Deadline d;
    d.forever = timeout.count() <= 0;
    if (!d.forever) d.at = Clock::now() + timeout;
    return d;
  }
  bool passed() const { return !forever && Clock::now() >= at; }
};

// Runs `io` until `done` becomes true (the operation's handler ran) or the
// deadline passes; false on timeout, with the operation still pending.
// With `idle`: io.poll() and idle() in turn; without: sleeps in run_one.
bool drive(asio::io_context& io, const bool& done, const Deadline& deadline, const Idle& idle);

// After a timeout: the caller has cancelled the operation; this runs its
// handler (operation_aborted) so nothing refers to the caller's frame.
void settle(asio::io_context& io, const bool& done);

// "10.0.0.2:18515", "[::1]:18515"; IPv4-mapped IPv6 shown as IPv4.
std::string endpoint_text(const tcp::endpoint& ep);
std::string host_port_text(const std::string& host, uint16_t port);
// "10 s" for whole seconds, else "1500 ms".
std::string duration_text(Millis t);

}  // namespace detail
}  // namespace uroce::exchange
