// SPDX-License-Identifier: BSD-3-Clause
// Why a device string did not become an ethdev port, in words a user can
// act on: an unknown driver, a PCI device that is missing or bound to a
// kernel driver, an interface that does not exist, or arguments the
// driver refused.
#pragma once

#include <string>

namespace uroce::dpdk {

// Before probing: no bus of the EAL claims `dev` (neither a PCI address
// nor the name of a vdev driver that is loaded). Empty if one does.
std::string unknown_device(const std::string& dev);

// After rte_dev_probe(dev) returned `rc` (< 0).
std::string probe_failure(const std::string& dev, int rc);

}  // namespace uroce::dpdk
