// SPDX-License-Identifier: BSD-3-Clause
// What the tools that face a peer over a real port share beyond the
// library's Endpoint: the --eal string as arguments, and the way out.
#pragma once

#include <unistd.h>

#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

namespace uroce::app {

// --eal "ARGS": split on spaces.
inline std::vector<std::string> split_args(const std::string& s) {
  std::istringstream in(s);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

// Ends the process once every port and device is closed and stdio is
// flushed, without the C library's teardown: DPDK's interrupt thread may
// be handling a peer's disconnect (memif) at that moment, and exit() or
// rte_eal_cleanup() unmapping memory under it crashes it.
[[noreturn]] inline void exit_now(int status) {
  std::fflush(nullptr);
  _exit(status);
}

}  // namespace uroce::app
