// SPDX-License-Identifier: BSD-3-Clause
// ThreadSanitizer builds only (scripts/sanitize.sh tsan): tells TSan about
// the synchronisation that DPDK's uninstrumented libraries provide between
// two engine threads. Outside TSan builds tsan_teach_dpdk() is empty.
//
// The threaded-mode tests join two devices, each with its engine thread, by
// a ring-PMD port pair. A frame goes from one engine thread to the other
// inside Debian's librte_net_ring, and the mbuf comes back for reuse
// through librte_mempool_ring; neither is instrumented, so TSan would see
// the two threads touch one mbuf, or the zero-copy payload it points to,
// with no order between them. Two things restore what DPDK guarantees:
//  - on every port, a TX callback releases each mbuf's address and an RX
//    callback acquires it: what the sending thread did before the burst
//    happens before what the receiving thread does after it;
//  - the memory of every mbuf pool is declared a benign-race range, for the
//    trip back through the pool.
// The rings between an application thread and an engine thread (QP
// submissions, doorbells, completions) are DPDK's inline ring code compiled
// into uroce, which TSan sees, and stay checked.
#pragma once

#if defined(__SANITIZE_THREAD__)
#include <rte_ethdev.h>
#include <rte_mempool.h>

#include <cstddef>
#include <set>
#include <string>
#include <utility>

extern "C" {
void AnnotateBenignRaceSized(const char* file, int line, const volatile void* mem, size_t size,
                             const char* description);
void __tsan_acquire(void* addr);
void __tsan_release(void* addr);
}

namespace uroce::test {

inline uint16_t tsan_tx_release(uint16_t, uint16_t, rte_mbuf* pkts[], uint16_t n, void*) {
  for (uint16_t i = 0; i < n; ++i) __tsan_release(pkts[i]);
  return n;
}

inline uint16_t tsan_rx_acquire(uint16_t, uint16_t, rte_mbuf* pkts[], uint16_t n, uint16_t, void*) {
  for (uint16_t i = 0; i < n; ++i) __tsan_acquire(pkts[i]);
  return n;
}

// Call once the devices exist (their pools and ports), before their engine
// threads start; calling it again adds only what is new.
inline void tsan_teach_dpdk() {
  rte_mempool_walk(
      [](rte_mempool* mp, void*) {
        rte_mempool_mem_iter(
            mp,
            [](rte_mempool*, void*, rte_mempool_memhdr* m, unsigned) {
              AnnotateBenignRaceSized(__FILE__, __LINE__, m->addr, m->len,
                                      "mbufs recycled between threads by uninstrumented DPDK code");
            },
            nullptr);
      },
      nullptr);
  // A port id is reused once a test closes its port: (id, name) is a port.
  static std::set<std::pair<uint16_t, std::string>> done;
  uint16_t port;
  RTE_ETH_FOREACH_DEV(port) {
    char name[RTE_ETH_NAME_MAX_LEN] = {};
    rte_eth_dev_get_name_by_port(port, name);
    if (!done.insert({port, name}).second) continue;
    rte_eth_dev_info info{};
    if (rte_eth_dev_info_get(port, &info) != 0) continue;
    for (uint16_t q = 0; q < info.nb_tx_queues; ++q) rte_eth_add_tx_callback(port, q, tsan_tx_release, nullptr);
    for (uint16_t q = 0; q < info.nb_rx_queues; ++q) rte_eth_add_rx_callback(port, q, tsan_rx_acquire, nullptr);
  }
}

}  // namespace uroce::test
#else
namespace uroce::test {
inline void tsan_teach_dpdk() {}
}  // namespace uroce::test
#endif
