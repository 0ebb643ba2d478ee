// SPDX-License-Identifier: BSD-3-Clause
// Catch2 runner for wire-bench. EAL is started once, before Catch runs,
// because rte_net_crc's AVX-512 path needs the EAL max SIMD width of 512
// (rte_vect_set_max_simd_bitwidth); nothing else in the benchmarks needs EAL.
#include "../common/catch_session.h"

#include <rte_eal.h>
#include <sched.h>

#include <cstdio>
#include <string>
#include <vector>

namespace {

// EAL pins the main thread to its lcore's CPU. Using the first CPU the
// process may run on keeps `taskset -c N wire-bench` on core N.
std::string first_allowed_cpu() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &set)) return std::to_string(c);
  }
  return "0";
}

bool start_eal(const char* prog) {
  std::vector<std::string> args = {prog, "--no-huge", "-m", "64", "--no-shconf", "--no-pci", "--no-telemetry",
                                   "-l", first_allowed_cpu(), "--force-max-simd-bitwidth=512",
                                   "--log-level=error"};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  return rte_eal_init(int(argv.size()), argv.data()) >= 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (!start_eal(argv[0])) {
    std::fprintf(stderr, "wire-bench: rte_eal_init failed\n");
    return 1;
  }
  const int rc = uroce::test::run_catch(argc, argv);
  rte_eal_cleanup();
  return rc;
}
