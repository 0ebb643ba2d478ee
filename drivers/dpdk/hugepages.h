// SPDX-License-Identifier: BSD-3-Clause
// The hugepage facts eal_hugepages_available() decides on, as one line:
// the no-hugepage notice is shown again only when this line changes.
#pragma once

#include <string>

namespace uroce::dpdk {

std::string hugepage_state();

}  // namespace uroce::dpdk
