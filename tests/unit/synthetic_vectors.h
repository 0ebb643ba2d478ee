// SPDX-License-Identifier: BSD-3-Clause
// The oracle's synthetic vectors (tests/data/synthetic/*.json).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace uroce::test {

// The whole JSON document of "roce_vectors.json" or "roce_vectors_negative.json".
const nlohmann::json& synthetic_doc(const std::string& file);

// A JSON number, or a "0x..." / decimal string, as an integer.
uint64_t json_uint(const nlohmann::json& j);

// The vector's frame from its frame_hex.
std::vector<uint8_t> vector_frame(const nlohmann::json& vec);

}  // namespace uroce::test
