// SPDX-License-Identifier: BSD-3-Clause
#include "asio_loop.h"
#include "uroce/exchange/tcp_channel.h"

namespace uroce::exchange {

using detail::Deadline;

TcpListener::TcpListener(std::unique_ptr<Impl> impl, uint16_t port) : impl_(std::move(impl)), port_(port) {}

TcpListener::~TcpListener() = default;

void TcpListener::close() {
  boost::system::error_code ignored;
  impl_->acceptor.close(ignored);
}

std::unique_ptr<TcpListener> TcpListener::listen(uint16_t port, std::string& error) {
  auto impl = std::make_unique<Impl>();
  tcp::acceptor& a = impl->acceptor;
  boost::system::error_code ec;

  // Dual-stack [::] takes IPv4 and IPv6 clients on one socket; a kernel
  // without IPv6 fails at open or at v6_only, and then 0.0.0.0 it is.
  tcp::endpoint any(asio::ip::address_v6::any(), port);
  a.open(tcp::v6(), ec);
  if (!ec) a.set_option(asio::ip::v6_only(false), ec);
  if (ec) {
    boost::system::error_code ignored;
    a.close(ignored);
    any = tcp::endpoint(asio::ip::address_v4::any(), port);
    ec.clear();
    a.open(tcp::v4(), ec);
  }
  if (!ec) a.set_option(tcp::acceptor::reuse_address(true), ec);
  if (!ec) a.bind(any, ec);
  if (!ec) a.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    error = "cannot listen on TCP port " + std::to_string(port) + ": " + ec.message();
    return nullptr;
  }
  uint16_t bound = a.local_endpoint(ec).port();
  if (ec) {
    error = "cannot read the port bound for TCP port " + std::to_string(port) + ": " + ec.message();
    return nullptr;
  }
  return std::unique_ptr<TcpListener>(new TcpListener(std::move(impl), bound));
}

std::unique_ptr<TcpChannel> TcpListener::accept(Millis timeout, const Idle& idle, std::string& error) {
  asio::io_context& io = *impl_->io;
  // The channel gets its own io_context: channels and the listener may
  // then be used from different threads.
  auto channel_io = std::make_shared<asio::io_context>(1);
  tcp::socket peer(*channel_io);
  bool done = false;
  boost::system::error_code ec;
  impl_->acceptor.async_accept(peer, [&](const boost::system::error_code& e) {
    ec = e;
    done = true;
  });
  if (!detail::drive(io, done, Deadline::after(timeout), idle)) {
    boost::system::error_code ignored;
    impl_->acceptor.cancel(ignored);
    detail::settle(io, done);
    error = "no client connected to TCP port " + std::to_string(port_) + " within " + detail::duration_text(timeout);
    return nullptr;
  }
  if (ec) {
    error = "accept on TCP port " + std::to_string(port_) + " failed: " + ec.message();
    return nullptr;
  }
  boost::system::error_code ignored;
  peer.set_option(tcp::no_delay(true), ignored);
  tcp::endpoint remote = peer.remote_endpoint(ec);
  std::string text = ec ? "client on port " + std::to_string(port_) : detail::endpoint_text(remote);
  auto impl = std::make_unique<TcpChannel::Impl>(std::move(channel_io), std::move(peer));
  return std::unique_ptr<TcpChannel>(new TcpChannel(std::move(impl), std::move(text), idle));
}

}  // namespace uroce::exchange
