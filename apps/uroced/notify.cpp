// SPDX-License-Identifier: BSD-3-Clause
#include "notify.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdlib>
#include <cstring>

namespace uroced {

bool notify_service_manager(const char* message) {
  const char* path = std::getenv("NOTIFY_SOCKET");
  if (path == nullptr || path[0] == '\0') return true;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  const size_t len = std::strlen(path);
  // Only Unix socket addresses (systemd also knows vsock: ones).
  if ((path[0] != '/' && path[0] != '@') || len >= sizeof addr.sun_path) return errno = EAFNOSUPPORT, false;
  std::memcpy(addr.sun_path, path, len);
  if (path[0] == '@') addr.sun_path[0] = '\0';  // abstract: its length counts, no terminating NUL
  const int s = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (s < 0) return false;
  const auto addr_len = socklen_t(offsetof(sockaddr_un, sun_path) + len + (path[0] == '@' ? 0 : 1));
  const ssize_t sent =
      sendto(s, message, std::strlen(message), MSG_NOSIGNAL, reinterpret_cast<const sockaddr*>(&addr), addr_len);
  close(s);
  return sent == ssize_t(std::strlen(message));
}

}  // namespace uroced
