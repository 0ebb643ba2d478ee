// SPDX-License-Identifier: BSD-3-Clause
#include "veth_netns.h"

#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <vector>

namespace uroce::test {

int run_ip(const std::vector<std::string>& args, std::string& out) {
  std::string cmd = find_ip_tool();
  if (cmd.empty()) {
    out = "ip not found";
    return 127;
  }
  for (const std::string& a : args) cmd += " '" + a + "'";
  cmd += " 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) return 127;
  char buf[256];
  out.clear();
  while (std::fgets(buf, sizeof buf, p)) out += buf;
  const int status = ::pclose(p);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

namespace {

void write_sysctl(const std::string& path, const char* value) {
  std::ofstream f(path);
  f << value;
}

}  // namespace

std::string find_ip_tool() {
  for (const char* dir : {"/usr/sbin", "/sbin", "/usr/bin", "/bin"}) {
    const std::string p = std::string(dir) + "/ip";
    if (::access(p.c_str(), X_OK) == 0) return p;
  }
  return "";
}

bool enter_private_netns(std::string& error) {
  if (::unshare(CLONE_NEWNET) != 0) {
    error = std::string("unshare(CLONE_NEWNET) failed: ") + std::strerror(errno);
    return false;
  }
  // sysctls under /proc/sys/net belong to the namespace that opens them.
  write_sysctl("/proc/sys/net/ipv6/conf/all/disable_ipv6", "1");
  write_sysctl("/proc/sys/net/ipv6/conf/default/disable_ipv6", "1");
  return true;
}

VethPair::VethPair(const std::string& prefix, unsigned mtu) : a_(prefix + "a"), b_(prefix + "b") {
  std::string out;
  const std::string m = std::to_string(mtu);
  if (run_ip({"link", "add", a_, "mtu", m, "type", "veth", "peer", "name", b_, "mtu", m}, out) != 0) {
    error_ = "ip link add " + a_ + " type veth peer name " + b_ + " failed: " + out;
    return;
  }
  for (const std::string& dev : {a_, b_}) {
    if (run_ip({"link", "set", "dev", dev, "up"}, out) != 0) {
      error_ = "ip link set dev " + dev + " up failed: " + out;
      return;
    }
  }
  ok_ = true;
}

VethPair::~VethPair() {
  std::string out;
  run_ip({"link", "del", "dev", a_}, out);  // deletes the peer too
}

}  // namespace uroce::test
