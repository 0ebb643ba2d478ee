// SPDX-License-Identifier: BSD-3-Clause
// DPDK's CRC API for C++: rte_vect.h and rte_net_crc.h have no extern "C"
// guard of their own (dpdk-notes section 2, pitfall 3).
#pragma once

extern "C" {
#include <rte_vect.h>
#include <rte_net_crc.h>
}
