// SPDX-License-Identifier: BSD-3-Clause
#include "uroce/exchange/tcp_channel.h"

#include <poll.h>

#include "asio_loop.h"

namespace uroce::exchange {

using detail::Deadline;

namespace {

// Between refused attempts: short enough that a server starting a moment
// later is reached at once, long enough not to flood it with SYNs.
constexpr Millis kRetryPause{100};

void tune(tcp::socket& s) {
  boost::system::error_code ignored;
  // One write per message, and every step waits for the peer's reply:
  // Nagle would only add delayed-ACK stalls.
  s.set_option(tcp::no_delay(true), ignored);
}

// Waits `pause` (bounded by the deadline) while calling idle.
void pause_until(asio::io_context& io, Millis pause, const Deadline& deadline, const Idle& idle) {
  asio::steady_timer timer(io);
  auto at = detail::Clock::now() + pause;
  if (!deadline.forever && deadline.at < at) at = deadline.at;
  timer.expires_at(at);
  bool done = false;
  timer.async_wait([&](const boost::system::error_code&) { done = true; });
  detail::drive(io, done, Deadline{}, idle);
}

}  // namespace

TcpChannel::TcpChannel(std::unique_ptr<Impl> impl, std::string peer, const Idle& idle)
    : impl_(std::move(impl)), peer_(std::move(peer)), idle_(idle) {}

TcpChannel::~TcpChannel() = default;

std::unique_ptr<TcpChannel> TcpChannel::connect(const std::string& host, uint16_t port, Millis timeout,
                                                const Idle& idle, std::string& error) {
  auto io = std::make_shared<asio::io_context>(1);
  auto impl = std::make_unique<Impl>(io, tcp::socket(*io));
  const std::string target = detail::host_port_text(host, port);
  const Deadline deadline = Deadline::after(timeout);

  // Blocking lookup: numeric hosts resolve at once, names from /etc/hosts
  // or DNS in well under the RoCE timeouts the idle callback serves.
  boost::system::error_code ec;
  tcp::resolver resolver(*io);
  auto endpoints = resolver.resolve(host, std::to_string(port), ec);
  if (ec || endpoints.empty()) {
    error = "cannot resolve " + host + ": " + (ec ? ec.message() : std::string("no address"));
    return nullptr;
  }

  for (;;) {
    boost::system::error_code last;
    for (const auto& entry : endpoints) {
      boost::system::error_code ignored;
      impl->sock.close(ignored);
      bool done = false;
      impl->sock.async_connect(entry.endpoint(), [&](const boost::system::error_code& e) {
        last = e;
        done = true;
      });
      if (!detail::drive(*io, done, deadline, idle)) {
        impl->sock.close(ignored);
        detail::settle(*io, done);
        error = "cannot connect to " + target + ": no answer, timed out after " + detail::duration_text(timeout);
        return nullptr;
      }
      if (!last) {
        tune(impl->sock);
        tcp::endpoint remote = impl->sock.remote_endpoint(ec);
        std::string peer = ec ? target : detail::endpoint_text(remote);
        return std::unique_ptr<TcpChannel>(new TcpChannel(std::move(impl), std::move(peer), idle));
      }
    }
    // Only "refused" means "not listening yet"; anything else (no route,
    // unreachable) will not fix itself by waiting.
    if (last != asio::error::connection_refused) {
      error = "cannot connect to " + target + ": " + last.message();
      return nullptr;
    }
    pause_until(*io, kRetryPause, deadline, idle);
    if (deadline.passed()) {
      error = "cannot connect to " + target + ": " + last.message() + " (retried for " +
              detail::duration_text(timeout) + ")";
      return nullptr;
    }
  }
}

std::unique_ptr<TcpChannel> TcpChannel::accept(uint16_t port, Millis timeout, const Idle& idle, std::string& error) {
  auto listener = TcpListener::listen(port, error);
  if (!listener) return nullptr;
  // perftest, too, closes the listening socket once it has its client.
  return listener->accept(timeout, idle, error);
}

bool TcpChannel::send(const void* data, size_t n, std::string& error) {
  bool done = false;
  boost::system::error_code ec;
  size_t sent = 0;
  asio::async_write(impl_->sock, asio::buffer(data, n), [&](const boost::system::error_code& e, size_t k) {
    ec = e;
    sent = k;
    done = true;
  });
  if (!detail::drive(*impl_->io, done, Deadline::after(timeout_), idle_)) {
    boost::system::error_code ignored;
    impl_->sock.cancel(ignored);
    detail::settle(*impl_->io, done);
    error = "timed out after " + std::to_string(timeout_.count()) + " ms sending " + std::to_string(n) +
            " bytes to " + peer_ + " (" + std::to_string(sent) + " sent)";
    return false;
  }
  if (ec) {
    error = "cannot send " + std::to_string(n) + " bytes to " + peer_ + ": " + ec.message();
    return false;
  }
  return true;
}

bool TcpChannel::recv(void* data, size_t n, std::string& error) {
  bool eof = false;
  return receive(data, n, false, eof, error);
}

bool TcpChannel::recv_or_eof(void* data, size_t n, bool& eof, std::string& error) {
  return receive(data, n, true, eof, error);
}

bool TcpChannel::peer_closed() const {
  pollfd p{impl_->sock.native_handle(), POLLRDHUP, 0};
  return ::poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0;
}

bool TcpChannel::peer_spoke() const {
  pollfd p{impl_->sock.native_handle(), POLLIN | POLLRDHUP, 0};
  return ::poll(&p, 1, 0) > 0 && (p.revents & (POLLIN | POLLRDHUP | POLLHUP | POLLERR)) != 0;
}

bool TcpChannel::linger(Millis timeout) {
  boost::system::error_code ec;
  impl_->sock.shutdown(tcp::socket::shutdown_send, ec);
  const Millis saved = timeout_;
  const Idle idle = idle_;
  timeout_ = timeout;
  idle_ = nullptr;
  bool eof = false;
  std::string error;
  char sink;
  // One deadline for the whole wait, not one per byte that still arrives.
  const auto until = detail::Clock::now() + timeout;
  bool ok = true;
  while (ok && !eof) {
    const auto left = std::chrono::ceil<Millis>(until - detail::Clock::now());
    if (left.count() <= 0) break;
    timeout_ = left;
    ok = receive(&sink, 1, true, eof, error);  // EOF before the deadline: the peer is done
  }
  timeout_ = saved;
  idle_ = idle;
  return eof;
}

bool TcpChannel::receive(void* data, size_t n, bool eof_ok, bool& eof, std::string& error) {
  eof = false;
  bool done = false;
  boost::system::error_code ec;
  size_t got = 0;
  asio::async_read(impl_->sock, asio::buffer(data, n), [&](const boost::system::error_code& e, size_t k) {
    ec = e;
    got = k;
    done = true;
  });
  auto got_text = [&] { return got ? " (" + std::to_string(got) + " received)" : std::string(); };
  if (!detail::drive(*impl_->io, done, Deadline::after(timeout_), idle_)) {
    boost::system::error_code ignored;
    impl_->sock.cancel(ignored);
    detail::settle(*impl_->io, done);
    error = "timed out after " + std::to_string(timeout_.count()) + " ms waiting for " + std::to_string(n) +
            " bytes from " + peer_ + got_text();
    return false;
  }
  if (ec == asio::error::eof) {
    if (eof_ok && got == 0) {
      eof = true;
      return true;
    }
    error = "peer " + peer_ + " closed the connection while " + std::to_string(n) + " bytes were expected" +
            got_text();
    return false;
  }
  if (ec) {
    error = "cannot receive " + std::to_string(n) + " bytes from " + peer_ + ": " + ec.message() + got_text();
    return false;
  }
  return true;
}

}  // namespace uroce::exchange
