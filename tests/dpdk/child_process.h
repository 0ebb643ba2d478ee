// SPDX-License-Identifier: BSD-3-Clause
// Runs a function in a forked child and collects what it reported, what it
// wrote on stderr and how it ended. The EAL can start only once per
// process, so every eal_init scenario gets a fresh process.
#pragma once

#include <functional>
#include <map>
#include <string>

namespace uroce::test {

struct ChildResult {
  int exit_code = -1;  // -1 if killed by a signal (or the deadline)
  int signal = 0;
  std::map<std::string, std::string> facts;  // what the child reported
  std::string err;                           // its stderr
  std::string out;                           // its stdout
  std::string fact(const std::string& key) const {
    auto it = facts.find(key);
    return it == facts.end() ? "<missing>" : it->second;
  }
};

// The child calls `report(key, value)` for each fact and returns its exit
// code. It is killed after `timeout_s` seconds.
using Report = std::function<void(const std::string&, const std::string&)>;
ChildResult run_in_child(const std::function<int(const Report&)>& body, unsigned timeout_s = 30);

}  // namespace uroce::test
