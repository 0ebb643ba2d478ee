// SPDX-License-Identifier: BSD-3-Clause
// Comparison of what the transport did with what the model predicts, as
// human-readable findings (empty = agreement).
#pragma once

#include <infiniband/verbs.h>

#include <string>
#include <vector>

#include "model.h"

namespace uroce::test::model {

// Completions of one queue (an endpoint's send or receive side), in the
// order the CQ returned them, against the prediction: same count, and
// entry by entry the same wr_id, status, opcode and, where verbs defines
// them, byte_len, immediate and invalidated key. `peer_qpn` is checked as
// src_qp of receive completions (0: not checked).
void compare_completions(const std::string& what, const std::vector<Wc>& expected, const std::vector<ibv_wc>& got,
                         bool receive, uint32_t peer_qpn, std::vector<std::string>& findings);

// Final bytes of a device's region; differences are named by the endpoint
// slice they fall in.
void compare_memory(const Scenario& s, uint32_t device, const std::vector<uint8_t>& expected, const uint8_t* got,
                    std::vector<std::string>& findings);

std::string to_string(const ibv_wc& wc);
std::string to_string(const Wc& wc);

}  // namespace uroce::test::model
