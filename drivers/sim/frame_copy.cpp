// SPDX-License-Identifier: BSD-3-Clause
#include "frame_copy.h"

#include <rte_lcore.h>
#include <rte_mbuf.h>

#include <atomic>
#include <cstdio>

namespace uroce::sim::detail {

rte_mempool* create_copy_pool(uint32_t size) {
  // Mempool names are global to the process; several wires may coexist.
  static std::atomic<uint32_t> serial{0};
  char name[RTE_MEMPOOL_NAMESIZE];
  std::snprintf(name, sizeof name, "uroce_sim%u", serial.fetch_add(1));
  // No per-lcore cache: the avail count stays exact, which leak checks
  // rely on, and copies are rare enough not to need one.
  return rte_pktmbuf_pool_create(name, size, 0, 0, RTE_MBUF_DEFAULT_BUF_SIZE, int(rte_socket_id()));
}

void flip_bit(rte_mbuf* m, uint32_t off, unsigned bit) {
  for (; m != nullptr; m = m->next) {
    if (off < m->data_len) {
      *rte_pktmbuf_mtod_offset(m, uint8_t*, off) ^= uint8_t(1u << bit);
      return;
    }
    off -= m->data_len;
  }
}

}  // namespace uroce::sim::detail
