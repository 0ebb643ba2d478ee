// SPDX-License-Identifier: BSD-3-Clause
#include "synthetic_vectors.h"

#include <fstream>
#include <map>
#include <stdexcept>

#include "test_support.h"

namespace uroce::test {

const nlohmann::json& synthetic_doc(const std::string& file) {
  static std::map<std::string, nlohmann::json> cache;
  auto it = cache.find(file);
  if (it != cache.end()) return it->second;
  std::ifstream in(data_path("synthetic/" + file));
  if (!in) throw std::runtime_error("cannot read " + file);
  return cache[file] = nlohmann::json::parse(in);
}

uint64_t json_uint(const nlohmann::json& j) {
  if (j.is_number_unsigned() || j.is_number_integer()) return j.get<uint64_t>();
  if (j.is_boolean()) return j.get<bool>() ? 1 : 0;
  const std::string s = j.get<std::string>();
  return std::stoull(s, nullptr, s.rfind("0x", 0) == 0 ? 16 : 10);
}

std::vector<uint8_t> vector_frame(const nlohmann::json& vec) {
  return from_hex(vec.at("frame_hex").get<std::string>());
}

}  // namespace uroce::test
