// SPDX-License-Identifier: BSD-3-Clause
// Random scenarios for the property test: QP pairs between devices with
// random path MTU, timers, initial PSNs and RD/atomic depth (some pairs
// repeat a device pair, a few loop back within one device), and per QP a
// random sequence of every RC opcode, sizes log-uniform from 0 bytes up,
// multi-SGE, inline, signaled or not. Everything follows from the seed.
#pragma once

#include <cstdint>

#include "model.h"

namespace uroce::test::model {

struct WorkloadConfig {
  uint32_t devices = 3;
  uint32_t pairs = 6;
  uint32_t min_ops = 10;            // per endpoint (each side of a pair posts)
  uint32_t max_ops = 60;
  uint32_t min_log2_size = 10;      // a pair's largest message: 2^[min..max] bytes
  uint32_t max_log2_size = 22;      // 4 MiB
  uint64_t byte_budget = 24 << 20;  // sum of message lengths over the scenario
  uint32_t max_inline = 256;        // the QPs' max_inline_data
  uint32_t max_sge = 3;             // per WR (the QPs allow 4)
};

Scenario generate(uint64_t seed, const WorkloadConfig& cfg);

}  // namespace uroce::test::model
