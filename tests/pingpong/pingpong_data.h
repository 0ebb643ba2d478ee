// SPDX-License-Identifier: BSD-3-Clause
// The captured pingpong exchange streams in tests/data/exchange/pingpong.
#pragma once

#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>

namespace uroce::test {

// NAME.SIDE.bin, SIDE "client" (client -> server bytes) or "server".
inline std::string read_stream(const std::string& name, const std::string& side) {
  const std::string path = std::string(UROCE_TEST_DATA) + "/exchange/pingpong/" + name + "." + side + ".bin";
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("cannot open " + path);
  return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

}  // namespace uroce::test
