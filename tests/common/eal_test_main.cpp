// SPDX-License-Identifier: BSD-3-Clause
// Catch2 main for test programs that need DPDK: EAL can start only once
// per process, so it starts here, before any test, without hugepages.
#include <rte_eal.h>

#include <cstdio>
#include <string>
#include <vector>

#include "catch_session.h"

namespace {

int init_eal(const char* prog) {
  std::vector<std::string> args = {prog, "--no-huge", "-m", "256", "--no-shconf", "--no-pci",
                                   "--no-telemetry", "-l", "0", "--log-level=error"};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  // EAL may permute argv, so it gets its own array, not the test's.
  return rte_eal_init(int(argv.size()), argv.data());
}

}  // namespace

int main(int argc, char** argv) {
  if (init_eal(argv[0]) < 0) {
    std::fprintf(stderr, "rte_eal_init failed\n");
    return 2;
  }
  const int rc = uroce::test::run_catch(argc, argv);
  rte_eal_cleanup();
  return rc;
}
