// SPDX-License-Identifier: BSD-3-Clause
#include "raw_socket.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <thread>

namespace uroce::test {
namespace {

using Clock = std::chrono::steady_clock;

sockaddr_in loopback(uint16_t port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return a;
}

int remaining_ms(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return left > 0 ? int(left) : 0;
}

bool wait_readable(int fd, int timeout_ms) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, timeout_ms) == 1;
}

}  // namespace

RawSocket::~RawSocket() { close(); }

RawSocket& RawSocket::operator=(RawSocket&& o) noexcept {
  if (this != &o) {
    close();
    fd_ = o.fd_;
    o.fd_ = -1;
  }
  return *this;
}

void RawSocket::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

RawSocket RawSocket::listen_loopback() {
  RawSocket s(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in a = loopback(0);
  if (!s.ok() || ::bind(s.fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(s.fd_, 4) != 0)
    return RawSocket();
  return s;
}

uint16_t RawSocket::free_port() { return listen_loopback().port(); }

RawSocket RawSocket::connect_loopback(uint16_t port, int timeout_ms) {
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  do {
    RawSocket s(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_in a = loopback(port);
    if (s.ok() && ::connect(s.fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) return s;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  } while (Clock::now() < deadline);
  return RawSocket();
}

uint16_t RawSocket::port() const {
  sockaddr_in a{};
  socklen_t len = sizeof a;
  if (fd_ < 0 || ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len) != 0) return 0;
  return ntohs(a.sin_port);
}

RawSocket RawSocket::accept(int timeout_ms) const {
  if (!wait_readable(fd_, timeout_ms)) return RawSocket();
  return RawSocket(::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC));
}

bool RawSocket::write_all(const std::string& bytes) const {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::send(fd_, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += size_t(n);
  }
  return true;
}

std::string RawSocket::read(size_t n, int timeout_ms) const {
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  std::string out;
  char buf[4096];
  while (out.size() < n && wait_readable(fd_, remaining_ms(deadline))) {
    const ssize_t got = ::recv(fd_, buf, std::min(sizeof buf, n - out.size()), 0);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    out.append(buf, size_t(got));
  }
  return out;
}

bool RawSocket::closed_by_peer(int timeout_ms) const {
  if (!wait_readable(fd_, timeout_ms)) return false;
  char c;
  return ::recv(fd_, &c, 1, 0) <= 0;
}

}  // namespace uroce::test
