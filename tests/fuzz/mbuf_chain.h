// SPDX-License-Identifier: BSD-3-Clause
// A hand-built rte_mbuf chain over a copy of a frame, without EAL or a
// mempool: each segment gets its own exactly-sized heap buffer, so a read
// past a segment's end is a heap overflow that ASan reports.
#pragma once

#include <rte_mbuf.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <vector>

namespace uroce::fuzz {

class MbufChain {
 public:
  // `cuts` are ascending offsets in [0, frame.size()]; n cuts give n + 1
  // segments (empty ones included: nothing in the mbuf contract forbids them).
  MbufChain(std::span<const uint8_t> frame, std::span<const uint32_t> cuts) {
    uint32_t start = 0;
    for (size_t i = 0; i <= cuts.size(); ++i) {
      const uint32_t end = i < cuts.size() ? cuts[i] : uint32_t(frame.size());
      add_segment(frame.subspan(start, end - start));
      start = end;
    }
    link(uint32_t(frame.size()));
  }
  MbufChain(const MbufChain&) = delete;
  MbufChain& operator=(const MbufChain&) = delete;

  const rte_mbuf* head() const { return &segs_[0]->m; }

 private:
  // rte_mbuf is cache-line aligned; the wrapper keeps that on the heap.
  struct alignas(RTE_CACHE_LINE_SIZE) Seg {
    rte_mbuf m;
  };

  void add_segment(std::span<const uint8_t> bytes) {
    auto seg = std::make_unique<Seg>();
    std::memset(&seg->m, 0, sizeof(seg->m));
    bufs_.push_back(std::make_unique<uint8_t[]>(bytes.size()));
    if (!bytes.empty()) std::memcpy(bufs_.back().get(), bytes.data(), bytes.size());
    seg->m.buf_addr = bufs_.back().get();
    seg->m.buf_len = uint16_t(bytes.size());
    seg->m.data_off = 0;
    seg->m.data_len = uint16_t(bytes.size());
    segs_.push_back(std::move(seg));
  }

  void link(uint32_t pkt_len) {
    for (size_t i = 0; i + 1 < segs_.size(); ++i) segs_[i]->m.next = &segs_[i + 1]->m;
    segs_[0]->m.pkt_len = pkt_len;
    segs_[0]->m.nb_segs = uint16_t(segs_.size());
  }

  std::vector<std::unique_ptr<Seg>> segs_;
  std::vector<std::unique_ptr<uint8_t[]>> bufs_;
};

}  // namespace uroce::fuzz
