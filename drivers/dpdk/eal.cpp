// SPDX-License-Identifier: BSD-3-Clause
// eal_init(): start the EAL once per process with the arguments of
// build_eal_args(), and turn a failure into a message that says what to do;
// eal_shutdown(): the way out.
#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>

#include "eal_args.h"
#include "hugepages.h"
#include "teardown.h"
#include "uroce/port/eal.h"

namespace uroce {
namespace {

std::mutex g_mutex;
bool g_started = false;  // by eal_init, as the primary process

// Where the no-hugepage notice remembers the hugepage state it was shown
// for: $UROCE_STATE_DIR, else /run/uroce for root, else
// $XDG_RUNTIME_DIR/uroce; both are emptied at boot. "" if none.
std::string notice_state_dir() {
  if (const char* d = std::getenv("UROCE_STATE_DIR"); d && *d) return d;
  if (::geteuid() == 0) return "/run/uroce";
  if (const char* x = std::getenv("XDG_RUNTIME_DIR"); x && *x) return std::string(x) + "/uroce";
  return "";
}

// True when the notice has not been shown for this hugepage state yet (and
// records that it now is). Without a writable state directory: always.
bool hugepage_notice_due() {
  const std::string dir = notice_state_dir();
  if (dir.empty()) return true;
  const std::string file = dir + "/hugepage-notice";
  const std::string state = dpdk::hugepage_state();
  std::string seen;
  if (std::ifstream in(file); in && std::getline(in, seen) && seen == state) return false;
  ::mkdir(dir.c_str(), 0755);
  const std::string tmp = file + "." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::trunc);
    if (!(out << state << '\n')) return true;
  }
  if (std::rename(tmp.c_str(), file.c_str()) != 0) ::unlink(tmp.c_str());
  return true;
}

void undo_at_exit() { dpdk::undo_kernel_state(); }

// The runtime directory is ours only as the primary process; a secondary
// (--proc-type=secondary) shares its primary's.
void take_over_runtime_dir() {
  if (rte_eal_process_type() != RTE_PROC_PRIMARY) return;
  const std::string dir = rte_eal_get_runtime_dir();
  dpdk::remember_runtime_dir(dir.c_str());
  const size_t slash = dir.rfind('/');
  if (slash != std::string::npos && slash > 0)
    dpdk::remove_stale_runtime_dirs(dir.substr(0, slash), dir.substr(slash + 1));
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
  if (args.no_huge_fallback && hugepage_notice_due())
    std::fprintf(stderr,
                 "uroce: no free hugepages (no writable hugetlbfs mount with free pages): running EAL with "
                 "--no-huge -m 512; for hugepages: echo 512 > /proc/sys/vm/nr_hugepages; "
                 "mount -t hugetlbfs nodev /dev/hugepages (shown once while this stays so)\n");

  // EAL permutes argv, so it gets copies that live as long as the process.
  static std::vector<std::string> storage;
  storage = args.argv;
  static std::vector<char*> argv;
  argv.clear();
  for (std::string& a : storage) argv.push_back(a.data());
  argv.push_back(nullptr);

  // EAL's threads (interrupts, multi-process) inherit this mask: the
  // signals that end the process are handled on the application's threads.
  sigset_t ending, before;
  sigemptyset(&ending);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&ending, sig);
  pthread_sigmask(SIG_BLOCK, &ending, &before);
  const int rc = rte_eal_init(int(storage.size()), argv.data());
  pthread_sigmask(SIG_SETMASK, &before, nullptr);
  if (rc < 0) {
    const int err = rte_errno;
    error = std::string("EAL initialisation failed: ") + rte_strerror(err) + " (" + std::to_string(err) +
            "); command line: " + dpdk::join_args(args.argv) + "; " + advice(err, !huge);
    return false;
  }
  g_started = true;
  take_over_runtime_dir();
  std::atexit(undo_at_exit);
  dpdk::install_signal_cleanup();
  return true;
}

void eal_shutdown() {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_started) {
    uint16_t id;
    RTE_ETH_FOREACH_DEV(id) {
      rte_eth_dev_info info{};
      if (rte_eth_dev_info_get(id, &info) == 0 && info.driver_name && std::strcmp(info.driver_name, "net_memif") == 0)
        continue;
      rte_eth_dev_stop(id);
      rte_eth_dev_close(id);  // af_xdp: the PMD detaches its XDP program here
      dpdk::forget_xdp(id);
    }
    if (!dpdk::memif_opened()) rte_eal_cleanup();
    g_started = false;
  }
  dpdk::undo_kernel_state();
}

}  // namespace uroce
