// SPDX-License-Identifier: BSD-3-Clause
// mbuf operations of the wire that are not about timing: private copies
// and the one-bit corruption.
#pragma once

#include <cstdint>

struct rte_mbuf;
struct rte_mempool;

namespace uroce::sim::detail {

// A unique-named pktmbuf pool for the wire's copies, or nullptr.
rte_mempool* create_copy_pool(uint32_t size);

// Flips bit `bit` (0..7) of byte `off` of the chain; off < pkt_len.
void flip_bit(rte_mbuf* m, uint32_t off, unsigned bit);

}  // namespace uroce::sim::detail
