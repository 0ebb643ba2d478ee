// SPDX-License-Identifier: BSD-3-Clause
// What the tools that face a peer over a real port share beyond the
// library's Endpoint: the --eal string as arguments, a completion's status
// in words, and the way out.
#pragma once

#include <infiniband/verbs.h>
#include <unistd.h>

#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "uroce/port/eal.h"

namespace uroce::app {

// --eal "ARGS": split on spaces.
inline std::vector<std::string> split_args(const std::string& s) {
  std::istringstream in(s);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

// A completion's status as rdma-core's tools print it: ibv_wc_status_str's
// words and the number, "transport retry counter exceeded (12)". Every tool
// says it the same way, so a user can look up either half.
inline std::string wc_status_text(ibv_wc_status status) {
  return std::string(ibv_wc_status_str(status)) + " (" + std::to_string(int(status)) + ")";
}

// Ends the process without the C library's teardown (exit() would unmap
// memory under DPDK's interrupt thread, which may be handling a memif
// peer's disconnect at that moment: it crashes). eal_shutdown first
// closes the ports that are safe to close (an af_xdp port detaches its XDP
// program) and removes EAL's runtime directory; stdio is flushed.
[[noreturn]] inline void exit_now(int status) {
  std::fflush(nullptr);
  uroce::eal_shutdown();
  std::fflush(nullptr);
  _exit(status);
}

}  // namespace uroce::app
