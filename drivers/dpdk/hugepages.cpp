// SPDX-License-Identifier: BSD-3-Clause
// Whether the EAL can use hugepages here: a mounted hugetlbfs we may write
// to, whose page size has free pages (see docs/ports.md).
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "hugepages.h"
#include "uroce/port/eal.h"

namespace uroce {
namespace {

// "pagesize=2M" / "pagesize=1G" / "pagesize=2048k" in the mount options, in kB.
uint64_t option_page_kb(const std::string& options) {
  std::stringstream ss(options);
  std::string opt;
  while (std::getline(ss, opt, ',')) {
    if (opt.rfind("pagesize=", 0) != 0) continue;
    const std::string v = opt.substr(9);
    char* end = nullptr;
    const uint64_t n = std::strtoull(v.c_str(), &end, 10);
    switch (end && *end ? (*end | 0x20) : 'b') {
      case 'k': return n;
      case 'm': return n * 1024;
      case 'g': return n * 1024 * 1024;
      default: return n / 1024;
    }
  }
  return 0;
}

uint64_t default_page_kb() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  uint64_t value = 0;
  std::string unit;
  while (in >> key >> value) {
    std::getline(in, unit);
    if (key == "Hugepagesize:") return value;
  }
  return 0;
}

uint64_t free_pages(uint64_t page_kb) {
  std::ifstream in("/sys/kernel/mm/hugepages/hugepages-" + std::to_string(page_kb) + "kB/free_hugepages");
  uint64_t n = 0;
  return (in >> n) ? n : 0;
}

struct HugetlbMount {
  std::string dir;
  uint64_t page_kb = 0;
  bool writable = false;
};

// The hugetlbfs mounts of /proc/mounts, each with its page size (the
// mount's pagesize= option, else the default) and whether we may use it.
std::vector<HugetlbMount> hugetlb_mounts() {
  std::vector<HugetlbMount> out;
  std::ifstream mounts("/proc/mounts");
  std::string line;
  while (std::getline(mounts, line)) {
    std::istringstream fields(line);
    std::string src, dir, type, options;
    if (!(fields >> src >> dir >> type >> options) || type != "hugetlbfs") continue;
    uint64_t kb = option_page_kb(options);
    if (kb == 0) kb = default_page_kb();
    out.push_back({dir, kb, ::access(dir.c_str(), W_OK) == 0});
  }
  return out;
}

}  // namespace

namespace dpdk {

std::string hugepage_state() {
  std::string state = "default " + std::to_string(default_page_kb()) + "kB " +
                      std::to_string(free_pages(default_page_kb())) + " free;";
  for (const HugetlbMount& m : hugetlb_mounts())
    state += " " + m.dir + " " + std::to_string(m.page_kb) + "kB " + std::to_string(free_pages(m.page_kb)) +
             " free" + (m.writable ? "" : " read-only") + ";";
  return state;
}

}  // namespace dpdk

bool eal_hugepages_available() {
  for (const HugetlbMount& m : hugetlb_mounts())
    if (m.page_kb != 0 && free_pages(m.page_kb) > 0 && m.writable) return true;
  return false;
}

}  // namespace uroce
