// SPDX-License-Identifier: BSD-3-Clause
// The EAL command line eal_init() builds from an EalConfig.
#pragma once

#include <string>
#include <vector>

#include "uroce/port/eal.h"

namespace uroce::dpdk {

struct EalArgs {
  std::vector<std::string> argv;  // argv[0] is the program name
  bool no_huge_fallback = false;  // we chose --no-huge because there are no hugepages
};

EalArgs build_eal_args(const EalConfig& config, bool hugepages);

// The command line as one string, for messages.
std::string join_args(const std::vector<std::string>& argv);

}  // namespace uroce::dpdk
