#include "tx_extbuf.h"

#include <rte_malloc.h>
#include <rte_mbuf.h>

#include "mr_access.h"

namespace uroce::memory {
namespace {

void free_shinfo(void* /*addr*/, void* opaque) { rte_free(opaque); }

rte_mbuf_ext_shared_info* shinfo_of(MemoryRegion& mr, bool create) {
  void*& slot = MrAccess::tx_shinfo(mr);
  if (slot == nullptr && create) {
    auto* s = static_cast<rte_mbuf_ext_shared_info*>(rte_zmalloc("uroce_tx_shinfo", sizeof(rte_mbuf_ext_shared_info), 0));
    if (s == nullptr) return nullptr;
    s->free_cb = free_shinfo;
    s->fcb_opaque = s;
    rte_mbuf_ext_refcnt_set(s, 1);  // the region's own reference
    slot = s;
  }
  return static_cast<rte_mbuf_ext_shared_info*>(slot);
}

}  // namespace

rte_mbuf* attach_tx_payload(rte_mempool* pool, MemoryRegion& mr, uint8_t* p, uint32_t len) {
  rte_mbuf_ext_shared_info* s = shinfo_of(mr, true);
  if (s == nullptr) return nullptr;
  rte_mbuf* m = rte_pktmbuf_alloc(pool);
  if (m == nullptr) return nullptr;
  rte_mbuf_ext_refcnt_update(s, 1);
  // IOVA: the virtual address. Software ports read by it; a NIC gets
  // chains only in IOVA-as-VA mode and only from DPDK memory
  // (TxChains, Engine::zero_copy_from).
  rte_pktmbuf_attach_extbuf(m, p, rte_iova_t(reinterpret_cast<uintptr_t>(p)), uint16_t(len), s);
  m->data_off = 0;
  m->data_len = uint16_t(len);
  m->pkt_len = len;
  return m;
}

bool tx_payloads_in_flight(MemoryRegion& mr) {
  rte_mbuf_ext_shared_info* s = shinfo_of(mr, false);
  return s != nullptr && rte_mbuf_ext_refcnt_read(s) > 1;
}

void release_tx_payloads(MemoryRegion& mr) {
  rte_mbuf_ext_shared_info* s = shinfo_of(mr, false);
  if (s != nullptr && rte_mbuf_ext_refcnt_update(s, -1) == 0) rte_free(s);
  MrAccess::tx_shinfo(mr) = nullptr;
}

}  // namespace uroce::memory
