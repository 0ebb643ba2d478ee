// SPDX-License-Identifier: BSD-3-Clause
// The IP ECN field of a frame, as a switch reads and rewrites it.
#pragma once

#include <cstdint>

struct rte_mbuf;

namespace uroce::sim::detail {

inline constexpr uint8_t kEcnNotEct = 0;
inline constexpr uint8_t kEcnCe = 3;

// Where the IP header of an Ethernet frame is (after at most one 802.1Q
// tag) and what its ECN field holds. ip_off is 0 when the frame is not
// IPv4/IPv6 or its IP header is not whole in the first segment.
struct EcnField {
  uint32_t ip_off = 0;
  bool v6 = false;
  uint8_t ecn = kEcnNotEct;
};
EcnField read_ecn(const rte_mbuf* m);

// Sets CE in place (first segment; the caller made it writable) and fixes
// the IPv4 header checksum incrementally (RFC 1624). The RoCEv2 ICRC
// masks the ECN bits, so it stays valid.
void set_ce(rte_mbuf* m, const EcnField& f);

}  // namespace uroce::sim::detail
