// SPDX-License-Identifier: BSD-3-Clause
// A buffer for a memory region flanked by PROT_NONE guard pages, with
// canary bytes in the slack between the buffer and each guard page: an
// engine access that runs past a region either faults on a guard page
// (ASan reports the SEGV) or changes a canary (check_canaries fails).
//
//   [guard page][lead canaries][bytes ...][trail canaries][guard page]
//
// lead == 0 puts the first byte right after a guard page; a length that
// ends on a page boundary puts the last byte right before one.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace uroce::fuzz {

class GuardedBuffer {
 public:
  GuardedBuffer(size_t len, size_t lead) : len_(len), lead_(lead) {
    page_ = size_t(sysconf(_SC_PAGESIZE));
    inner_ = round_up(lead + len);
    total_ = inner_ + 2 * page_;
    void* p = mmap(nullptr, total_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
      std::perror("fuzz: mmap");
      std::abort();
    }
    base_ = static_cast<uint8_t*>(p);
    if (mprotect(base_, page_, PROT_NONE) != 0 || mprotect(base_ + page_ + inner_, page_, PROT_NONE) != 0) {
      std::perror("fuzz: mprotect");
      std::abort();
    }
  }
  ~GuardedBuffer() { munmap(base_, total_); }
  GuardedBuffer(const GuardedBuffer&) = delete;
  GuardedBuffer& operator=(const GuardedBuffer&) = delete;

  uint8_t* data() const { return base_ + page_ + lead_; }
  size_t size() const { return len_; }

  // Bytes from `seed`, canaries in the slack.
  void fill(uint8_t seed) {
    make_image(seed);
    std::memcpy(base_ + page_, image_.data(), inner_);
  }
  // Offset (from the inner start) of the first changed canary, or -1.
  // Compares with the image of the last fill().
  long changed_canary() const {
    const uint8_t* inner = base_ + page_;
    if (std::memcmp(inner, image_.data(), lead_) == 0 &&
        std::memcmp(inner + lead_ + len_, image_.data() + lead_ + len_, inner_ - lead_ - len_) == 0)
      return -1;
    for (size_t i = 0; i < inner_; ++i)
      if ((i < lead_ || i >= lead_ + len_) && inner[i] != image_[i]) return long(i);
    return -1;
  }
  // Index of the first byte that differs from what the last fill() wrote, or -1.
  long changed_bytes() const {
    const uint8_t* p = data();
    if (std::memcmp(p, image_.data() + lead_, len_) == 0) return -1;
    for (size_t i = 0; i < len_; ++i)
      if (p[i] != image_[lead_ + i]) return long(i);
    return -1;
  }

 private:
  static constexpr uint8_t kCanary = 0xCB;
  size_t round_up(size_t n) const { return (n + page_ - 1) / page_ * page_; }
  void make_image(uint8_t seed) {
    if (image_.size() == inner_ && image_seed_ == seed) return;
    image_.assign(inner_, kCanary);
    for (size_t i = 0; i < len_; ++i) image_[lead_ + i] = uint8_t(seed + i * 7);
    image_seed_ = seed;
  }

  size_t len_, lead_, page_ = 4096, inner_ = 0, total_ = 0;
  uint8_t* base_ = nullptr;
  std::vector<uint8_t> image_;  // canaries and bytes as fill() wrote them
  uint8_t image_seed_ = 0;
};

}  // namespace uroce::fuzz
