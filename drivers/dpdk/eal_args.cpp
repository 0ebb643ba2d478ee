// SPDX-License-Identifier: BSD-3-Clause
#include "eal_args.h"

#include <sched.h>
#include <unistd.h>

#include <rte_config.h>

#include <algorithm>

namespace uroce::dpdk {
namespace {

bool has_flag(const std::vector<std::string>& args, std::initializer_list<const char*> flags) {
  return std::any_of(args.begin(), args.end(), [&](const std::string& a) {
    for (const char* f : flags) {
      const std::string s(f);
      // "--flag", "--flag=value", and short options glued to their value ("-l0").
      if (a == s || a.rfind(s + "=", 0) == 0 || (s.size() == 2 && s[1] != '-' && a.rfind(s, 0) == 0))
        return true;
    }
    return false;
  });
}

// "--lcores=0@(a,b-c,...)": lcore 0 may run on every CPU of our affinity
// mask, so the process is not pinned more narrowly than the user asked.
std::string lcores_from_affinity() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return "-l0";
  std::string list;
  int start = -1;
  auto flush = [&](int end) {
    if (start < 0) return;
    if (!list.empty()) list += ',';
    list += std::to_string(start);
    if (end > start) list += '-' + std::to_string(end);
    start = -1;
  };
  for (int cpu = 0; cpu <= RTE_MAX_LCORE; ++cpu) {
    const bool in = cpu < RTE_MAX_LCORE && CPU_ISSET(cpu, &set);
    if (in && start < 0) start = cpu;
    if (!in) flush(cpu - 1);
  }
  if (list.empty()) return "-l0";
  return "--lcores=0@(" + list + ")";
}

}  // namespace

EalArgs build_eal_args(const EalConfig& config, bool hugepages) {
  const std::vector<std::string>& user = config.args;
  EalArgs out;
  auto& v = out.argv;
  v.push_back("uroce");

  if (!has_flag(user, {"-l", "-c", "--lcores"})) v.push_back(lcores_from_affinity());

  if (has_flag(user, {"--no-huge"})) {
    if (!has_flag(user, {"--no-shconf", "--in-memory"})) v.push_back("--no-shconf");
    if (!has_flag(user, {"-m", "--socket-mem"})) v.insert(v.end(), {"-m", "512"});
  } else if (hugepages) {
    if (!has_flag(user, {"--in-memory", "--no-shconf", "--huge-unlink", "--proc-type"})) v.push_back("--in-memory");
  } else if (!has_flag(user, {"--in-memory", "--proc-type", "--socket-mem"})) {
    v.insert(v.end(), {"--no-huge", "--no-shconf"});
    if (!has_flag(user, {"-m"})) v.insert(v.end(), {"-m", "512"});
    out.no_huge_fallback = true;
  }

  if (!has_flag(user, {"--file-prefix"})) {
    const std::string prefix =
        config.file_prefix.empty() ? "uroce-" + std::to_string(::getpid()) : config.file_prefix;
    v.push_back("--file-prefix=" + prefix);
  }
  if (config.pci.empty()) {
    if (!has_flag(user, {"-a", "--allow", "-b", "--block", "--no-pci"})) v.push_back("--no-pci");
  } else {
    for (const std::string& dev : config.pci) v.insert(v.end(), {"-a", dev});
  }
  if (!has_flag(user, {"--no-telemetry", "--telemetry"})) v.push_back("--no-telemetry");
  if (config.quiet && !has_flag(user, {"--log-level"})) v.push_back("--log-level=error");

  v.insert(v.end(), user.begin(), user.end());
  return out;
}

std::string join_args(const std::vector<std::string>& argv) {
  std::string s;
  for (const std::string& a : argv) {
    if (!s.empty()) s += ' ';
    s += a;
  }
  return s;
}

}  // namespace uroce::dpdk
