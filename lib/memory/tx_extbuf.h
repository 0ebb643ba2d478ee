// SPDX-License-Identifier: BSD-3-Clause
// Zero-copy TX: payload segments that point into registered memory
// instead of holding a copy. Each region gets one rte_mbuf_ext_shared_info
// whose reference count is the region's own reference plus one per mbuf
// attached to it; DPDK drops a reference whenever such an mbuf is freed
// (by the port, after sending, or by a receiver on a ring link), and the
// last one frees the shared info. So the count says whether frames still
// point into the region, and the shared info outlives the region object
// when they do.
#pragma once

#include <cstdint>

struct rte_mbuf;
struct rte_mempool;

namespace uroce::memory {

struct Region;

// An mbuf from `pool` (no data room of its own) whose data is
// [p, p + len) inside `mr`; nullptr when the pool is empty.
rte_mbuf* attach_tx_payload(rte_mempool* pool, Region& mr, uint8_t* p, uint32_t len);
// True while frames attached to the region have not been freed.
bool tx_payloads_in_flight(Region& mr);
// The region goes away: drops its own reference. If frames still point
// into it (a NIC frees sent mbufs only on later TX calls), the memory must
// outlive the region object: `owned_mem` (memory the region allocated,
// or nullptr) is then freed with the last frame, and the call returns
// true; the caller must not free it.
bool release_tx_payloads(Region& mr, void* owned_mem);

}  // namespace uroce::memory
