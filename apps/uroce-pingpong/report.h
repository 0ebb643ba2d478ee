// SPDX-License-Identifier: BSD-3-Clause
// rc_pingpong's output lines, format for format.
#pragma once

#include <cstdint>

#include "uroce/exchange/pingpong.h"

namespace uroce::pingpong {

// "  local address:  LID 0x0000, QPN 0x000011, PSN 0x3a5f21, GID ::ffff:10.0.0.1"
// ud_pingpong prints its local line with ": GID" (`gid_sep` ": ").
void print_address(const char* label, const exchange::PingpongDest& d, const char* gid_sep = ", ");

// "8192000 bytes in 0.01 seconds = 5242.88 Mbit/sec" and
// "1000 iters in 0.01 seconds = 12.50 usec/iter"; usec as rc_pingpong
// computes it (a float from gettimeofday).
void print_result(uint32_t size, uint32_t iters, float usec);

}  // namespace uroce::pingpong
