// SPDX-License-Identifier: BSD-3-Clause
// Test fixture: two devices on a simulated wire with a connected RC QP
// pair (tests/common/connected_pair.h), registered buffers on both sides,
// and helpers to post and wait.
#pragma once

#include <catch2/catch.hpp>

#include <cstring>
#include <memory>
#include <vector>

#include "../common/connected_pair.h"
#include "sim_fabric.h"
#include "uroce/verbs/verbs.h"

namespace uroce::test {

// One end of the pair (tests/common/connected_pair.h).
using Side = PairSide;

// A side on dev with a buffer of `bytes` and a 4096-entry CQ.
inline Side make_side(Device& dev, size_t bytes, QpOptions o) {
  o.bytes = bytes;
  return make_side(dev, o);
}

struct RcPair {
  explicit RcPair(uint64_t seed = 1, size_t bytes = 1 << 20, QpOptions o = {}, uint16_t mtu = 1500)
      : fabric(seed, mtu) {
    Device& da = fabric.add_device("10.0.0.1");
    Device& db = fabric.add_device("10.0.0.2");
    o.bytes = bytes;
    connect_pair(a, da, with_psn(o, 0xFFFFF0), b, db, with_psn(o, 0x000100));
  }

  // Waits for n completions on `side`'s CQ (virtual time); returns them.
  std::vector<ibv_wc> wait(Side& side, size_t n, uint64_t max_ns = 5'000'000'000ull) {
    std::vector<ibv_wc> got;
    fabric.run_until(
        [&] {
          ibv_wc wc[16];
          int k;
          while ((k = side.cq->poll(16, wc)) > 0) got.insert(got.end(), wc, wc + k);
          return got.size() >= n;
        },
        max_ns);
    return got;
  }

  sim::SimFabric fabric;
  Side a, b;
};

}  // namespace uroce::test
