// SPDX-License-Identifier: BSD-3-Clause
// eal_init(): start the EAL once per process with the arguments of
// build_eal_args(), and turn a failure into a message that says what to do.
#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_lcore.h>

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <mutex>

#include "eal_args.h"
#include "uroce/port/eal.h"

namespace uroce {
namespace {

std::mutex g_mutex;
bool g_started = false;

// EAL creates /var/run/dpdk/<prefix>/ even when it shares nothing
// (--in-memory, --no-shconf) and never removes it; an empty one goes at exit.
std::string g_runtime_dir;
void remove_runtime_dir() {
  if (!g_runtime_dir.empty()) ::rmdir(g_runtime_dir.c_str());
}

std::string advice(int err, bool no_huge) {
  switch (err) {
    case EACCES:
      return "permission denied: run as root, or give this user access to hugepages and devices (VFIO)";
    case ENOMEM:
      return no_huge ? "not enough memory: lower -m in --eal, or set up hugepages"
                     : "not enough hugepage memory: add pages (echo 512 > /proc/sys/vm/nr_hugepages) or pass "
                       "--eal \"--no-huge -m 512\"";
    case EINVAL:
      return "invalid EAL arguments: check --eal and --pci (EAL's own message is above)";
    case ENOTSUP:
    case EPROTO:
      return "unsupported here (CPU, kernel or IOVA mode): see EAL's message above";
    case EALREADY:
      return "EAL was already initialised (or failed once) in this process";
    case ENODEV:
      return "no usable device or hugepage information: check --pci and the hugepage mounts";
    case EFAULT:
    case EBUSY:
      return "another DPDK process may hold this file prefix: pass a different --eal \"--file-prefix=NAME\"";
    default:
      return "see EAL's message above";
  }
}

}  // namespace

bool eal_initialized() {
  std::lock_guard<std::mutex> lock(g_mutex);
  // Someone else (a test main, the application) may have started it: the
  // lcore table and the TSC calibration both exist only after init.
  return g_started || (rte_lcore_count() > 0 && rte_get_tsc_hz() != 0);
}

bool eal_init(const EalConfig& config, std::string& error) {
  if (eal_initialized()) return true;
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_started) return true;

  const bool huge = eal_hugepages_available();
  const dpdk::EalArgs args = dpdk::build_eal_args(config, huge);
  if (args.no_huge_fallback)
    std::fprintf(stderr,
                 "uroce: no free hugepages (no writable hugetlbfs mount with free pages): running EAL with "
                 "--no-huge -m 512; for hugepages: echo 512 > /proc/sys/vm/nr_hugepages; "
                 "mount -t hugetlbfs nodev /dev/hugepages\n");

  // EAL permutes argv, so it gets copies that live as long as the process.
  static std::vector<std::string> storage;
  storage = args.argv;
  static std::vector<char*> argv;
  argv.clear();
  for (std::string& a : storage) argv.push_back(a.data());
  argv.push_back(nullptr);

  const int rc = rte_eal_init(int(storage.size()), argv.data());
  if (rc < 0) {
    const int err = rte_errno;
    error = std::string("EAL initialisation failed: ") + rte_strerror(err) + " (" + std::to_string(err) +
            "); command line: " + dpdk::join_args(args.argv) + "; " + advice(err, !huge);
    return false;
  }
  g_started = true;
  g_runtime_dir = rte_eal_get_runtime_dir();
  std::atexit(remove_runtime_dir);
  return true;
}

}  // namespace uroce
