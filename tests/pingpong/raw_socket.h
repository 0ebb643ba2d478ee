// SPDX-License-Identifier: BSD-3-Clause
// Plain blocking TCP sockets with deadlines, for playing the other side of
// an exchange byte for byte in tests (independent of TcpChannel).
#pragma once

#include <cstdint>
#include <string>

namespace uroce::test {

class RawSocket {
 public:
  RawSocket() = default;
  explicit RawSocket(int fd) : fd_(fd) {}
  ~RawSocket();
  RawSocket(RawSocket&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  RawSocket& operator=(RawSocket&& o) noexcept;

  // Listens on 127.0.0.1 at a port the kernel picks; port() tells which.
  static RawSocket listen_loopback();
  // Connects to 127.0.0.1:port, retrying refused connections until
  // timeout_ms passes (the listener may start a moment later).
  static RawSocket connect_loopback(uint16_t port, int timeout_ms);
  // A port that was free a moment ago (bound, then released).
  static uint16_t free_port();

  bool ok() const { return fd_ >= 0; }
  uint16_t port() const;
  RawSocket accept(int timeout_ms) const;
  bool write_all(const std::string& bytes) const;
  // Exactly n bytes within timeout_ms; fewer if the peer closes or time runs out.
  std::string read(size_t n, int timeout_ms) const;
  // True if the peer closes (EOF or reset) within timeout_ms without
  // sending anything more.
  bool closed_by_peer(int timeout_ms) const;
  void close();

 private:
  int fd_ = -1;
};

}  // namespace uroce::test
