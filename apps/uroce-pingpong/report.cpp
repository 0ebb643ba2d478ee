// SPDX-License-Identifier: BSD-3-Clause
#include "report.h"

#include <arpa/inet.h>

#include <cstdio>

namespace uroce::pingpong {

void print_address(const char* label, const exchange::PingpongDest& d, const char* gid_sep) {
  // inet_ntop of the raw GID, as rc_pingpong: "::ffff:10.0.0.1" for IPv4.
  char gid[INET6_ADDRSTRLEN];
  inet_ntop(AF_INET6, d.gid.bytes.data(), gid, sizeof gid);
  std::printf("  %s LID 0x%04x, QPN 0x%06x, PSN 0x%06x%sGID %s\n", label, unsigned(d.lid), unsigned(d.qpn),
              unsigned(d.psn), gid_sep, gid);
  std::fflush(stdout);
}

void print_result(uint32_t size, uint32_t iters, float usec) {
  const long long bytes = (long long)size * iters * 2;
  std::printf("%lld bytes in %.2f seconds = %.2f Mbit/sec\n", bytes, usec / 1000000., bytes * 8. / usec);
  std::printf("%u iters in %.2f seconds = %.2f usec/iter\n", iters, usec / 1000000., usec / iters);
  std::fflush(stdout);
}

}  // namespace uroce::pingpong
