// SPDX-License-Identifier: BSD-3-Clause
// DPDK's CRC API for C++: rte_vect.h and rte_net_crc.h have no extern "C"
// guard of their own, so they are included inside one here.
#pragma once

extern "C" {
#include <rte_vect.h>
#include <rte_net_crc.h>
}
