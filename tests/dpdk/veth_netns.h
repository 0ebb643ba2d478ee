// SPDX-License-Identifier: BSD-3-Clause
// A private network namespace for this process (unshare(CLONE_NEWNET)),
// and veth pairs created in it with `ip`. Nothing touches the host's
// interfaces, and everything disappears with the process even if it
// crashes; the guard also deletes its veth pair when it goes out of scope.
#pragma once

#include <string>
#include <vector>

namespace uroce::test {

// Moves the whole process into a new, empty network namespace (IPv6 off,
// so no router solicitations on the test links). Needs CAP_SYS_ADMIN.
bool enter_private_netns(std::string& error);

// `ip` runnable? Its path, or "" if not found.
std::string find_ip_tool();
// Runs `ip args...`; returns its exit code, and its output in `out`.
int run_ip(const std::vector<std::string>& args, std::string& out);

class VethPair {
 public:
  // Creates <prefix>a and <prefix>b (prefix at most 14 characters), up,
  // with the given MTU.
  VethPair(const std::string& prefix, unsigned mtu);
  ~VethPair();
  VethPair(const VethPair&) = delete;
  VethPair& operator=(const VethPair&) = delete;

  bool ok() const { return ok_; }
  const std::string& error() const { return error_; }
  const std::string& a() const { return a_; }
  const std::string& b() const { return b_; }

 private:
  std::string a_, b_, error_;
  bool ok_ = false;
};

}  // namespace uroce::test
