// SPDX-License-Identifier: BSD-3-Clause
// One datagram with up to kMaxFds descriptors (SCM_RIGHTS) over the
// control socket, for both ends of it.
#pragma once

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstring>

namespace uroce::daemon {

inline constexpr int kMaxFds = 8;

// 0, or an errno.
inline int send_datagram(int sock, const void* buf, size_t len, const int* fds, int nfds) {
  iovec iov{const_cast<void*>(buf), len};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxFds)]{};
  if (nfds > 0) {
    msg.msg_control = control;
    msg.msg_controllen = CMSG_SPACE(sizeof(int) * size_t(nfds));
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * size_t(nfds));
    std::memcpy(CMSG_DATA(c), fds, sizeof(int) * size_t(nfds));
  }
  for (;;) {
    const ssize_t n = sendmsg(sock, &msg, MSG_NOSIGNAL);
    if (n == ssize_t(len)) return 0;
    if (n < 0 && errno == EINTR) continue;
    return n < 0 ? errno : EMSGSIZE;
  }
}

struct Received {
  ssize_t len = 0;   // 0: the peer closed; -1: error (err)
  int err = 0;
  bool truncated = false;  // the datagram or its descriptors did not fit
  int fds[kMaxFds];
  int nfds = 0;
  Received() {
    for (int& fd : fds) fd = -1;
  }
};

// Receives one datagram into buf. Descriptors that arrive are returned
// (close-on-exec); the caller owns them and must close the ones it does not
// take.
inline Received recv_datagram(int sock, void* buf, size_t cap, int flags = 0) {
  Received r;
  iovec iov{buf, cap};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxFds)]{};
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  ssize_t n;
  do {
    n = recvmsg(sock, &msg, flags | MSG_CMSG_CLOEXEC);
  } while (n < 0 && errno == EINTR);
  if (n < 0) {
    r.len = -1;
    r.err = errno;
    return r;
  }
  r.len = n;
  r.truncated = (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) != 0;
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    const size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < count; ++i) {
      int fd;
      std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
      if (r.nfds < kMaxFds)
        r.fds[r.nfds++] = fd;
      else
        close(fd);
    }
  }
  return r;
}

inline void close_fds(Received& r) {
  for (int i = 0; i < r.nfds; ++i) close(r.fds[i]);
  r.nfds = 0;
}

}  // namespace uroce::daemon
