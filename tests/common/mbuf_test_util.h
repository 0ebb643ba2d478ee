// SPDX-License-Identifier: BSD-3-Clause
// mbuf helpers for DPDK tests (EAL started by eal_test_main.cpp): a pool
// that frees itself, frames made from bytes, and bytes read back.
#pragma once

#include <rte_lcore.h>
#include <rte_mbuf.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <span>
#include <stdexcept>
#include <vector>

namespace uroce::test {

struct MbufFree {
  void operator()(rte_mbuf* m) const { rte_pktmbuf_free(m); }
};
using MbufPtr = std::unique_ptr<rte_mbuf, MbufFree>;

// A pktmbuf pool with a unique name and no per-lcore cache, so avail()
// is exact and a leak check can compare it with size().
class TestPool {
 public:
  explicit TestPool(unsigned n = 1023, uint16_t data_room = RTE_MBUF_DEFAULT_BUF_SIZE) : size_(n) {
    static std::atomic<unsigned> serial{0};
    char name[RTE_MEMPOOL_NAMESIZE];
    std::snprintf(name, sizeof name, "test_pool%u", serial.fetch_add(1));
    pool_ = rte_pktmbuf_pool_create(name, n, 0, 0, data_room, int(rte_socket_id()));
    if (pool_ == nullptr) throw std::runtime_error("rte_pktmbuf_pool_create failed");
  }
  ~TestPool() { rte_mempool_free(pool_); }
  TestPool(const TestPool&) = delete;
  TestPool& operator=(const TestPool&) = delete;

  rte_mempool* get() const { return pool_; }
  unsigned size() const { return size_; }
  unsigned avail() const { return rte_mempool_avail_count(pool_); }

 private:
  rte_mempool* pool_ = nullptr;
  unsigned size_;
};

// An mbuf holding `bytes`, in segments of at most seg_len bytes (0: one
// segment). Throws if the pool is empty or a segment does not fit.
inline rte_mbuf* mbuf_from_bytes(rte_mempool* pool, std::span<const uint8_t> bytes, uint16_t seg_len = 0) {
  rte_mbuf* head = nullptr;
  size_t off = 0;
  do {
    rte_mbuf* seg = rte_pktmbuf_alloc(pool);
    if (seg == nullptr) {
      rte_pktmbuf_free(head);
      throw std::runtime_error("mbuf pool empty");
    }
    const size_t room = seg_len == 0 ? bytes.size() : std::min<size_t>(seg_len, bytes.size() - off);
    char* dst = rte_pktmbuf_append(seg, uint16_t(room));
    if (dst == nullptr && room > 0) {
      rte_pktmbuf_free(seg);
      rte_pktmbuf_free(head);
      throw std::runtime_error("segment larger than the mbuf data room");
    }
    if (room > 0) std::copy_n(bytes.data() + off, room, reinterpret_cast<uint8_t*>(dst));
    off += room;
    if (head == nullptr) {
      head = seg;
    } else if (rte_pktmbuf_chain(head, seg) != 0) {
      rte_pktmbuf_free(seg);
      rte_pktmbuf_free(head);
      throw std::runtime_error("too many segments");
    }
  } while (off < bytes.size());
  return head;
}

// Every byte of the frame, across segments.
inline std::vector<uint8_t> mbuf_bytes(const rte_mbuf* m) {
  std::vector<uint8_t> out;
  out.reserve(m->pkt_len);
  for (; m != nullptr; m = m->next) {
    const auto* p = rte_pktmbuf_mtod(m, const uint8_t*);
    out.insert(out.end(), p, p + m->data_len);
  }
  return out;
}

}  // namespace uroce::test
