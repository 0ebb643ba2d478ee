// SPDX-License-Identifier: BSD-3-Clause
// Helpers shared by the tests that call the drop-in libibverbs: the one
// device of the test's environment opened, and its event descriptors
// polled the way a program watches them.
#pragma once

#include <infiniband/verbs.h>

#include <catch2/catch.hpp>

#include <fcntl.h>
#include <poll.h>

namespace abi_test {

// The single device the environment names, opened for the test's scope.
struct Opened {
  ibv_device** list = nullptr;
  ibv_context* ctx = nullptr;
  Opened() {
    int n = 0;
    list = ibv_get_device_list(&n);
    REQUIRE(list);
    REQUIRE(n == 1);
    ctx = ibv_open_device(list[0]);
    REQUIRE(ctx);
  }
  ~Opened() {
    ibv_close_device(ctx);
    ibv_free_device_list(list);
  }
  Opened(const Opened&) = delete;
  Opened& operator=(const Opened&) = delete;
};

inline void set_nonblocking(int fd, bool on) {
  const int flags = fcntl(fd, F_GETFL);
  REQUIRE(flags >= 0);
  REQUIRE(fcntl(fd, F_SETFL, on ? (flags | O_NONBLOCK) : (flags & ~O_NONBLOCK)) == 0);
}

inline bool readable(int fd, int timeout_ms) {
  pollfd p{fd, POLLIN, 0};
  return poll(&p, 1, timeout_ms) == 1 && (p.revents & POLLIN);
}

}  // namespace abi_test
