// SPDX-License-Identifier: BSD-3-Clause
#include "loop_support.h"

#include <cstdio>

namespace uroce::pingpong {

void Progress::update(Clock::time_point now, uint32_t done) {
  if (now < next_) return;
  next_ = now + std::chrono::seconds(2);
  std::fprintf(stderr, "uroce-pingpong: %u/%u iterations, %.1f s\n", done, iters_,
               std::chrono::duration<double>(now - start_).count());
}

void drain(const PollFn& poll) {
  const auto deadline = Clock::now() + std::chrono::milliseconds(50);
  for (int quiet = 0; quiet < 64 && Clock::now() < deadline;) quiet = poll() ? 0 : quiet + 1;
}

}  // namespace uroce::pingpong
