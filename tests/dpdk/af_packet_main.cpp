// SPDX-License-Identifier: BSD-3-Clause
// Main of the af_packet test program: it needs root (a private network
// namespace and veth pairs) and the ip tool, so it exits 77 (meson:
// skipped) with a message without them; then it starts the EAL through
// eal_init itself.
#include "catch_session.h"

#include <rte_eal.h>
#include <unistd.h>

#include <cstdio>

#include "uroce/port/eal.h"
#include "veth_netns.h"

int main(int argc, char** argv) {
  if (geteuid() != 0) {
    std::fprintf(stderr, "SKIP: the af_packet test needs root (it creates a network namespace and veth pairs)\n");
    return 77;
  }
  if (uroce::test::find_ip_tool().empty()) {
    std::fprintf(stderr, "SKIP: the af_packet test needs the ip tool (apt-get install iproute2)\n");
    return 77;
  }
  std::string error;
  if (!uroce::test::enter_private_netns(error)) {
    std::fprintf(stderr, "FAIL: %s\n", error.c_str());
    return 1;
  }
  if (!uroce::eal_init({.quiet = true}, error)) {
    std::fprintf(stderr, "FAIL: %s\n", error.c_str());
    return 1;
  }
  const int rc = uroce::test::run_catch(argc, argv);
  rte_eal_cleanup();
  return rc;
}
