// SPDX-License-Identifier: BSD-3-Clause
// The ethdev ports a DpdkPort owns in this process, so one port is never
// driven by two DpdkPorts.
#pragma once

#include <cstdint>

namespace uroce::dpdk {

bool claim_port(uint16_t port_id);  // false if already claimed
void release_port(uint16_t port_id);

}  // namespace uroce::dpdk
