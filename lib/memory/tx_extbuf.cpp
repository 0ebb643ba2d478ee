// SPDX-License-Identifier: BSD-3-Clause
#include "tx_extbuf.h"

#include <rte_malloc.h>
#include <rte_mbuf.h>

#include "region.h"

namespace uroce::memory {
namespace {

// The shared info, and the region's memory once the region is gone while
// frames still point into it.
struct TxShared {
  rte_mbuf_ext_shared_info info;
  void* owned_mem;
};

void free_shared(void* /*addr*/, void* opaque) {
  auto* t = static_cast<TxShared*>(opaque);
  rte_free(t->owned_mem);
  rte_free(t);
}

rte_mbuf_ext_shared_info* shinfo_of(Region& mr, bool create) {
  void*& slot = mr.tx_shinfo;
  if (slot == nullptr && create) {
    auto* t = static_cast<TxShared*>(rte_zmalloc("uroce_tx_shinfo", sizeof(TxShared), 0));
    if (t == nullptr) return nullptr;
    rte_mbuf_ext_shared_info* s = &t->info;
    s->free_cb = free_shared;
    s->fcb_opaque = t;
    rte_mbuf_ext_refcnt_set(s, 1);  // the region's own reference
    slot = s;
  }
  return static_cast<rte_mbuf_ext_shared_info*>(slot);
}

}  // namespace

rte_mbuf* attach_tx_payload(rte_mempool* pool, Region& mr, uint8_t* p, uint32_t len) {
  rte_mbuf_ext_shared_info* s = shinfo_of(mr, true);
  if (s == nullptr) return nullptr;
  rte_mbuf* m = rte_pktmbuf_alloc(pool);
  if (m == nullptr) return nullptr;
  rte_mbuf_ext_refcnt_update(s, 1);
  // IOVA: the virtual address. Software ports read by it; a NIC gets
  // chains only in IOVA-as-VA mode and only from DPDK memory
  // (TxChains, transport::EngineServices::zero_copy_from).
  rte_pktmbuf_attach_extbuf(m, p, rte_iova_t(reinterpret_cast<uintptr_t>(p)), uint16_t(len), s);
  m->data_off = 0;
  m->data_len = uint16_t(len);
  m->pkt_len = len;
  return m;
}

bool tx_payloads_in_flight(Region& mr) {
  rte_mbuf_ext_shared_info* s = shinfo_of(mr, false);
  return s != nullptr && rte_mbuf_ext_refcnt_read(s) > 1;
}

bool release_tx_payloads(Region& mr, void* owned_mem) {
  rte_mbuf_ext_shared_info* s = shinfo_of(mr, false);
  mr.tx_shinfo = nullptr;
  if (s == nullptr) return false;
  auto* t = static_cast<TxShared*>(s->fcb_opaque);
  t->owned_mem = owned_mem;  // before the last frame can see the count reach 0
  if (rte_mbuf_ext_refcnt_update(s, -1) != 0) return true;
  rte_free(t);
  return false;
}

}  // namespace uroce::memory
