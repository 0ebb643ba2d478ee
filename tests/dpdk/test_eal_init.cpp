// SPDX-License-Identifier: BSD-3-Clause
// eal_init from scratch, each scenario in a fresh process (the EAL starts
// once per process): the default flags, the hugepage/no-hugepage choice
// and its notice, user flags winning, a second call, an EAL someone else
// started, a bad argument, and the port API refusing to run without EAL.
#include <catch2/catch.hpp>

#include <glob.h>
#include <sched.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_lcore.h>
#include <rte_log.h>
#include <rte_mbuf.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <csignal>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

#include "child_process.h"
#include "uroce/port/dpdk_port.h"
#include "uroce/port/eal.h"
#include "uroce/port/tsc_clock.h"

namespace uroce::test {
namespace {

const char* kNotice = "uroce: no free hugepages";

std::string b(bool v) { return v ? "1" : "0"; }

// Independently of the library: is some hugetlbfs mounted, and does the
// page size of one of the mounts have free pages?
bool hugepages_expected() {
  std::ifstream mounts("/proc/mounts");
  std::string line;
  bool mounted = false;
  while (std::getline(mounts, line)) mounted |= line.find(" hugetlbfs ") != std::string::npos;
  if (!mounted) return false;
  glob_t g{};
  bool free_pages = false;
  if (glob("/sys/kernel/mm/hugepages/hugepages-*/free_hugepages", 0, nullptr, &g) == 0) {
    for (size_t i = 0; i < g.gl_pathc; ++i) {
      std::ifstream f(g.gl_pathv[i]);
      long n = 0;
      free_pages |= (f >> n) && n > 0;
    }
  }
  globfree(&g);
  return free_pages;
}

long stderr_bytes() {
  struct stat st {};
  return fstat(2, &st) == 0 ? long(st.st_size) : -1;
}

std::string affinity() {
  cpu_set_t set;
  CPU_ZERO(&set);
  sched_getaffinity(0, sizeof set, &set);
  std::string s;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) s += std::to_string(c) + ",";
  return s;
}

// Starts EAL with `config` and reports what can be observed.
int init_and_report(const EalConfig& config, const Report& report) {
  report("pid", std::to_string(getpid()));
  report("before", b(eal_initialized()));
  report("huge_avail", b(eal_hugepages_available()));
  const std::string affinity_before = affinity();
  std::string error;
  const bool ok = eal_init(config, error);
  report("ok", b(ok));
  report("error", error);
  report("after", b(eal_initialized()));
  if (!ok) return 0;
  report("has_huge", b(rte_eal_has_hugepages() != 0));
  report("runtime_dir", rte_eal_get_runtime_dir());
  report("log_level", std::to_string(rte_log_get_global_level()));
  report("lcores", std::to_string(rte_lcore_count()));
  report("affinity_before", affinity_before);
  report("affinity_after", affinity());
  rte_mempool* pool = rte_pktmbuf_pool_create("eal_test_pool", 8191, 256, 0, RTE_MBUF_DEFAULT_BUF_SIZE, SOCKET_ID_ANY);
  report("pool_8191", b(pool != nullptr));
  rte_mempool_free(pool);

  const long err_before = stderr_bytes();
  std::string error2;
  report("second", b(eal_init(EalConfig{.args = {"--no-such-eal-flag"}}, error2)));
  report("second_error", error2);
  report("second_stderr_bytes", std::to_string(stderr_bytes() - err_before));
  rte_eal_cleanup();
  rmdir(rte_eal_get_runtime_dir());
  return 0;
}

void check_started(const ChildResult& r) {
  INFO("stderr: " << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.fact("before") == "0");
  CHECK(r.fact("ok") == "1");
  CHECK(r.fact("error").empty());
  CHECK(r.fact("after") == "1");
  CHECK(r.fact("lcores") == "1");
  CHECK(r.fact("pool_8191") == "1");
  CHECK(r.fact("second") == "1");
  CHECK(r.fact("second_error").empty());
  CHECK(r.fact("second_stderr_bytes") == "0");
}

}  // namespace

// A fresh directory for the notice's state file (UROCE_STATE_DIR), so that
// the notice is due in the first child that starts EAL.
std::string fresh_state_dir() {
  char tmpl[] = "/tmp/uroce-eal-state-XXXXXX";
  const char* d = mkdtemp(tmpl);
  REQUIRE(d != nullptr);
  return d;
}

void remove_state_dir(const std::string& dir) {
  unlink((dir + "/hugepage-notice").c_str());
  rmdir(dir.c_str());
}

TEST_CASE("eal_init from scratch: hugepages if available, else --no-huge with a one-line notice", "[eal]") {
  const std::string state = fresh_state_dir();
  setenv("UROCE_STATE_DIR", state.c_str(), 1);
  const ChildResult r = run_in_child([](const Report& report) { return init_and_report({.quiet = true}, report); });
  // The notice is shown once per hugepage state: not in the next process,
  // again when the recorded state is not this one.
  const ChildResult again = run_in_child([](const Report& report) { return init_and_report({.quiet = true}, report); });
  std::ofstream(state + "/hugepage-notice") << "some other hugepage state\n";
  const ChildResult changed = run_in_child([](const Report& report) { return init_and_report({.quiet = true}, report); });
  unsetenv("UROCE_STATE_DIR");
  remove_state_dir(state);
  check_started(again);
  check_started(changed);
  check_started(r);
  const bool huge = hugepages_expected();
  INFO("hugepages expected: " << huge << "; stderr: " << r.err);
  CHECK(r.fact("huge_avail") == b(huge));
  CHECK(r.fact("has_huge") == b(huge));
  const size_t at = r.err.find(kNotice);
  if (huge) {
    CHECK(at == std::string::npos);
  } else {
    REQUIRE(at != std::string::npos);
    const std::string line = r.err.substr(at, r.err.find('\n', at) - at);
    CHECK(line.find("--no-huge") != std::string::npos);
    CHECK(line.find("nr_hugepages") != std::string::npos);
    CHECK(r.err.find(kNotice, at + 1) == std::string::npos);  // once
    CHECK(line.find("shown once") != std::string::npos);
    INFO("second process: " << again.err << "; state changed: " << changed.err);
    CHECK(again.err.find(kNotice) == std::string::npos);
    CHECK(changed.err.find(kNotice) != std::string::npos);
  }
  // Default file prefix uroce-<pid>, --log-level=error when quiet, and
  // lcore 0 on the CPUs the process already had.
  const std::string dir = r.fact("runtime_dir");
  const std::string suffix = "/uroce-" + r.fact("pid");
  CHECK(dir.size() > suffix.size());
  CHECK(dir.substr(dir.size() - std::min(dir.size(), suffix.size())) == suffix);
  CHECK(r.fact("log_level") == std::to_string(RTE_LOG_ERR));
  CHECK(r.fact("affinity_after") == r.fact("affinity_before"));
}

TEST_CASE("eal_init: the user's flags win over the defaults, and a chosen --no-huge prints no notice", "[eal]") {
  const ChildResult r = run_in_child([](const Report& report) {
    EalConfig c;
    c.file_prefix = "uroce-fp-" + std::to_string(getpid());
    c.args = {"--no-huge", "-m", "128", "--log-level=warning", "-l", "0"};
    c.quiet = true;
    return init_and_report(c, report);
  });
  check_started(r);
  INFO("stderr: " << r.err);
  CHECK(r.err.find(kNotice) == std::string::npos);
  CHECK(r.fact("has_huge") == "0");
  const std::string dir = r.fact("runtime_dir");
  const std::string suffix = "/uroce-fp-" + r.fact("pid");
  CHECK(dir.size() > suffix.size());
  CHECK(dir.substr(dir.size() - std::min(dir.size(), suffix.size())) == suffix);
  CHECK(r.fact("log_level") == std::to_string(RTE_LOG_WARNING));
  CHECK(r.fact("affinity_after") == "0,");  // -l 0 pins to CPU 0
}

TEST_CASE("eal_init after someone else started the EAL: true, silent, no second init", "[eal]") {
  const ChildResult r = run_in_child([](const Report& report) {
    std::vector<std::string> args = {"other", "--no-huge", "-m", "64", "--no-shconf", "--no-pci",
                                     "--no-telemetry", "-l", "0", "--log-level=error",
                                     "--file-prefix=uroce-other-" + std::to_string(getpid())};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    report("before", b(eal_initialized()));
    report("direct", std::to_string(rte_eal_init(int(argv.size()), argv.data())));
    report("after", b(eal_initialized()));
    const long err_before = stderr_bytes();
    std::string error;
    report("ok", b(eal_init({.quiet = true}, error)));
    report("error", error);
    report("stderr_bytes", std::to_string(stderr_bytes() - err_before));
    rte_eal_cleanup();
    rmdir(rte_eal_get_runtime_dir());
    return 0;
  });
  INFO("stderr: " << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.fact("before") == "0");
  CHECK(r.fact("direct") != "-1");
  CHECK(r.fact("after") == "1");
  CHECK(r.fact("ok") == "1");
  CHECK(r.fact("error").empty());
  CHECK(r.fact("stderr_bytes") == "0");
}

TEST_CASE("eal_init with a bad EAL argument: false, and a message with EAL's reason and the command line", "[eal]") {
  const ChildResult r = run_in_child([](const Report& report) {
    return init_and_report({.args = {"--no-such-eal-flag"}, .quiet = true}, report);
  });
  INFO("stderr: " << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.fact("ok") == "0");
  CHECK(r.fact("after") == "0");
  const std::string e = r.fact("error");
  INFO("error: " << e);
  CHECK(e.find("EAL initialisation failed") != std::string::npos);
  CHECK(e.find("--no-such-eal-flag") != std::string::npos);
  CHECK(e.find("--no-telemetry") != std::string::npos);
  CHECK(e.find("invalid EAL arguments") != std::string::npos);
}

TEST_CASE("without eal_init, ports refuse to open and TscClock falls back to the steady clock", "[eal]") {
  const ChildResult r = run_in_child([](const Report& report) {
    std::string e1, e2;
    report("initialized", b(eal_initialized()));
    report("port", b(DpdkPort::open({.dev = "net_ring0"}, e1) != nullptr));
    report("port_error", e1);
    std::unique_ptr<DpdkPort> a, bp;
    report("pair", b(open_ring_pair("x", 1500, a, bp, e2)));
    report("pair_error", e2);
    TscClock clock;
    report("hz", std::to_string(clock.hz()));
    const uint64_t t0 = clock.now_ns();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    report("dt", std::to_string(clock.now_ns() - t0));
    return 0;
  });
  INFO("stderr: " << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.fact("initialized") == "0");
  CHECK(r.fact("port") == "0");
  CHECK(r.fact("port_error").find("net_ring0") != std::string::npos);
  CHECK(r.fact("port_error").find("eal_init") != std::string::npos);
  CHECK(r.fact("pair") == "0");
  CHECK(r.fact("pair_error").find("eal_init") != std::string::npos);
  CHECK(r.fact("hz") == "0");
  CHECK(std::stoull(r.fact("dt")) >= 20'000'000ull);
}

TEST_CASE("TscClock after eal_init advances with wall time and never goes back", "[eal]") {
  const ChildResult r = run_in_child([](const Report& report) {
    std::string error;
    if (!eal_init({.quiet = true}, error)) {
      report("error", error);
      return 1;
    }
    TscClock clock;
    report("hz", std::to_string(clock.hz()));
    uint64_t prev = clock.now_ns();
    bool monotonic = true;
    for (int i = 0; i < 100000; ++i) {
      const uint64_t t = clock.now_ns();
      monotonic &= t >= prev;
      prev = t;
    }
    report("monotonic", b(monotonic));
    // Against the steady clock over 200 ms, several times: the best ratio.
    double best = 1e9;
    for (int i = 0; i < 3; ++i) {
      const auto s0 = std::chrono::steady_clock::now();
      const uint64_t t0 = clock.now_ns();
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      const uint64_t t1 = clock.now_ns();
      const auto s1 = std::chrono::steady_clock::now();
      const double steady = double(std::chrono::duration_cast<std::chrono::nanoseconds>(s1 - s0).count());
      const double ratio = double(t1 - t0) / steady;
      if (std::abs(ratio - 1) < std::abs(best - 1)) best = ratio;
    }
    report("ratio", std::to_string(best));
    report("runtime_dir", rte_eal_get_runtime_dir());
    rte_eal_cleanup();
    std::exit(0);  // through atexit: eal_init's handler removes the runtime dir
  });
  INFO("stderr: " << r.err << " error: " << r.fact("error"));
  REQUIRE(r.exit_code == 0);
  CHECK(std::stoull(r.fact("hz")) > 100'000'000ull);
  CHECK(r.fact("monotonic") == "1");
  const double ratio = std::stod(r.fact("ratio"));
  CHECK(ratio > 0.98);
  CHECK(ratio < 1.02);
  // The empty /var/run/dpdk/<prefix> EAL made is gone after exit().
  CHECK(r.fact("runtime_dir").find("/uroce-") != std::string::npos);
  CHECK(access(r.fact("runtime_dir").c_str(), F_OK) != 0);
}

}  // namespace uroce::test

namespace uroce::test {

TEST_CASE("eal_init removes the runtime directories of dead uroce processes, and only those", "[eal]") {
  // Where EAL puts its runtime directories for this user.
  const char* xdg = std::getenv("XDG_RUNTIME_DIR");
  const std::string base = geteuid() == 0 ? "/var/run/dpdk" : std::string(xdg ? xdg : "/tmp") + "/dpdk";
  mkdir(base.c_str(), 0700);
  // A pid that is surely gone: a child that has exited and been reaped.
  const pid_t dead = fork();
  if (dead == 0) _exit(0);
  REQUIRE(dead > 0);
  waitpid(dead, nullptr, 0);
  const std::string stale = base + "/uroce-" + std::to_string(dead);
  const std::string alive = base + "/uroce-" + std::to_string(getpid());  // this process, which lives on
  const std::string other = base + "/uroce-x" + std::to_string(dead);     // not uroce-<pid>
  for (const std::string& d : {stale, alive, other}) {
    REQUIRE(mkdir(d.c_str(), 0700) == 0);
    std::ofstream(d + "/fbarray_memseg-2048k-0-0") << "x";
  }
  const ChildResult r = run_in_child([](const Report& report) { return init_and_report({.quiet = true}, report); });
  INFO("stderr: " << r.err);
  CHECK(r.exit_code == 0);
  CHECK(access(stale.c_str(), F_OK) != 0);
  CHECK(access(alive.c_str(), F_OK) == 0);
  CHECK(access(other.c_str(), F_OK) == 0);
  for (const std::string& d : {stale, alive, other}) {
    unlink((d + "/fbarray_memseg-2048k-0-0").c_str());
    rmdir(d.c_str());
  }
}

TEST_CASE("SIGTERM after eal_init: the process dies of it and its runtime directory is gone", "[eal]") {
  const ChildResult r = run_in_child([](const Report& report) {
    // Catch2 handles SIGTERM itself; eal_init takes only signals left at
    // their default action.
    signal(SIGTERM, SIG_DFL);
    std::string error;
    if (!eal_init({.quiet = true}, error)) {
      report("error", error);
      return 1;
    }
    report("runtime_dir", rte_eal_get_runtime_dir());
    report("dir_exists", b(access(rte_eal_get_runtime_dir(), F_OK) == 0));
    kill(getpid(), SIGTERM);
    for (;;) pause();
  });
  INFO("stderr: " << r.err << " error: " << r.fact("error"));
  CHECK(r.signal == SIGTERM);
  CHECK(r.fact("dir_exists") == "1");
  CHECK(r.fact("runtime_dir").find("/uroce-") != std::string::npos);
  CHECK(access(r.fact("runtime_dir").c_str(), F_OK) != 0);
}

}  // namespace uroce::test
