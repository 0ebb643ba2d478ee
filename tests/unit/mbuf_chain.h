// SPDX-License-Identifier: BSD-3-Clause
// A hand-built rte_mbuf chain over a copy of a frame, without an EAL or a
// mempool: parse_mbuf() only follows buf_addr/data_off/data_len/next.
// Each segment's buffer ends exactly at its data, so a sanitizer or
// valgrind sees any read past a segment.
#pragma once

#include <rte_mbuf.h>

#include <cstring>
#include <memory>
#include <span>
#include <stdexcept>
#include <vector>

namespace uroce::test {

class MbufChain {
 public:
  // Segment i holds frame[cuts[i-1], cuts[i]); cuts must be non-decreasing.
  MbufChain(std::span<const uint8_t> frame, const std::vector<size_t>& cuts) {
    size_t from = 0;
    for (size_t i = 0; i <= cuts.size(); ++i) {
      const size_t to = i < cuts.size() ? cuts[i] : frame.size();
      if (to < from || to > frame.size()) throw std::invalid_argument("bad cut");
      add_segment(frame.subspan(from, to - from));
      from = to;
    }
    segs_[0]->pkt_len = uint32_t(frame.size());
    segs_[0]->nb_segs = uint16_t(segs_.size());
  }

  const rte_mbuf* head() const { return segs_[0].get(); }
  rte_mbuf* head() { return segs_[0].get(); }

 private:
  static constexpr uint16_t kHeadroom = 64;

  void add_segment(std::span<const uint8_t> bytes) {
    auto buf = std::make_unique<uint8_t[]>(kHeadroom + bytes.size());
    if (!bytes.empty()) std::memcpy(buf.get() + kHeadroom, bytes.data(), bytes.size());
    auto m = std::make_unique<rte_mbuf>();  // value-initialised: all zero
    m->buf_addr = buf.get();
    m->buf_len = uint16_t(kHeadroom + bytes.size());
    m->data_off = kHeadroom;
    m->data_len = uint16_t(bytes.size());
    m->pkt_len = uint32_t(bytes.size());
    m->nb_segs = 1;
    if (!segs_.empty()) segs_.back()->next = m.get();
    segs_.push_back(std::move(m));
    bufs_.push_back(std::move(buf));
  }

  std::vector<std::unique_ptr<rte_mbuf>> segs_;
  std::vector<std::unique_ptr<uint8_t[]>> bufs_;
};

}  // namespace uroce::test
