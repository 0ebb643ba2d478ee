// SPDX-License-Identifier: BSD-3-Clause
#include "capture_script.h"

#include <catch2/catch.hpp>
#include <fstream>
#include <map>
#include <sstream>

namespace uroce::test {

namespace {

std::map<std::string, std::vector<TcpPayload>> load() {
  std::map<std::string, std::vector<TcpPayload>> all;
  const std::string path = std::string(UROCE_TEST_DATA) + "/exchange/perftest/perftest_tcp.txt";
  std::ifstream in(path);
  if (!in) FAIL("cannot open " << path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    std::string name, side, hex;
    TcpPayload p;
    fields >> name >> p.frame >> side >> hex;
    if (!fields || (side != "C" && side != "S") || hex.size() % 2) FAIL("bad line in " << path << ": " << line);
    p.from_client = side == "C";
    for (size_t i = 0; i < hex.size(); i += 2) p.bytes.push_back(uint8_t(std::stoi(hex.substr(i, 2), nullptr, 16)));
    all[name].push_back(std::move(p));
  }
  return all;
}

}  // namespace

const std::vector<TcpPayload>& perftest_capture(const std::string& name) {
  static const auto all = load();
  auto it = all.find(name);
  if (it == all.end()) FAIL("no capture " << name << " in perftest_tcp.txt");
  return it->second;
}

}  // namespace uroce::test
