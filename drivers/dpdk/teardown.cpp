// SPDX-License-Identifier: BSD-3-Clause
#include "teardown.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/if_link.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <rte_config.h>

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <climits>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>

namespace uroce::dpdk {
namespace {

// Plain arrays and atomics: a signal handler reads them.
char g_run_dir[PATH_MAX];
std::atomic<bool> g_run_dir_set{false};
std::atomic<unsigned> g_xdp_ifindex[RTE_MAX_ETHPORTS];
std::atomic<bool> g_memif{false};

constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP};

// The fixed part of the kernel's linux_dirent64; the name follows it.
struct Dirent64 {
  uint64_t ino;
  int64_t off;
  unsigned short reclen;
  unsigned char type;
};

// Calls f(name, d_type) for each entry of the directory open as `fd`.
template <typename F>
void for_each_entry(int fd, F&& f) {
  alignas(8) char buf[4096];
  for (;;) {
    const long n = syscall(SYS_getdents64, fd, buf, sizeof buf);
    if (n <= 0) return;
    for (long at = 0; at < n;) {
      const auto* d = reinterpret_cast<const Dirent64*>(buf + at);
      at += d->reclen;
      const char* name = reinterpret_cast<const char*>(d) + offsetof(Dirent64, type) + 1;
      if (std::strcmp(name, ".") != 0 && std::strcmp(name, "..") != 0) f(name, d->type);
    }
  }
}

void put_attr(char*& p, unsigned short type, const void* data, unsigned short len) {
  auto* a = reinterpret_cast<rtattr*>(p);
  a->rta_type = type;
  a->rta_len = RTA_LENGTH(len);
  std::memcpy(RTA_DATA(a), data, len);
  p += RTA_ALIGN(a->rta_len);
}

// RTM_SETLINK with IFLA_XDP { FD = -1, FLAGS = mode }: what bpf_xdp_detach
// sends, on the stack.
bool xdp_detach_mode(int sock, unsigned ifindex, uint32_t mode) {
  struct {
    nlmsghdr nh;
    ifinfomsg ifi;
    alignas(NLMSG_ALIGNTO) char attrs[64];
  } req;
  std::memset(&req, 0, sizeof req);
  req.nh.nlmsg_type = RTM_SETLINK;
  req.nh.nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
  req.nh.nlmsg_seq = 1;
  req.ifi.ifi_family = AF_UNSPEC;
  req.ifi.ifi_index = int(ifindex);
  char* p = req.attrs;
  auto* nest = reinterpret_cast<rtattr*>(p);
  nest->rta_type = IFLA_XDP | NLA_F_NESTED;
  p += RTA_LENGTH(0);
  const int32_t no_fd = -1;
  put_attr(p, IFLA_XDP_FD, &no_fd, sizeof no_fd);
  if (mode) put_attr(p, IFLA_XDP_FLAGS, &mode, sizeof mode);
  nest->rta_len = static_cast<unsigned short>(p - reinterpret_cast<char*>(nest));
  req.nh.nlmsg_len = NLMSG_LENGTH(sizeof(ifinfomsg)) + uint32_t(p - req.attrs);

  sockaddr_nl to{};
  to.nl_family = AF_NETLINK;
  if (sendto(sock, &req, req.nh.nlmsg_len, 0, reinterpret_cast<sockaddr*>(&to), sizeof to) < 0) return false;
  alignas(NLMSG_ALIGNTO) char buf[1024];
  const ssize_t n = recv(sock, buf, sizeof buf, 0);
  const auto* h = reinterpret_cast<const nlmsghdr*>(buf);
  if (n < ssize_t(NLMSG_LENGTH(sizeof(nlmsgerr))) || h->nlmsg_type != NLMSG_ERROR) return false;
  return static_cast<const nlmsgerr*>(NLMSG_DATA(h))->error == 0;
}

bool config_locked(int dir_fd) {
  const int fd = openat(dir_fd, "config", O_RDWR | O_CLOEXEC);
  if (fd < 0) return false;
  struct flock lk {};
  lk.l_type = F_WRLCK;
  lk.l_whence = SEEK_SET;
  const bool locked = fcntl(fd, F_GETLK, &lk) == 0 && lk.l_type != F_UNLCK;
  close(fd);
  return locked;
}

// "uroce-<digits>": the pid, or 0.
long uroce_pid(const char* name) {
  if (std::strncmp(name, "uroce-", 6) != 0 || name[6] == '\0') return 0;
  long pid = 0;
  for (const char* c = name + 6; *c; ++c) {
    if (*c < '0' || *c > '9' || pid > INT_MAX / 10) return 0;
    pid = pid * 10 + (*c - '0');
  }
  return pid;
}

// Seconds since the epoch at which process `pid` started, 0 if unknown.
double process_start(long pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  const size_t paren = text.rfind(')');  // the command name may hold spaces
  if (paren == std::string::npos) return 0;
  std::istringstream fields(text.substr(paren + 2));
  std::string field;
  for (int i = 3; i < 22 && fields >> field;) ++i;  // field 22: start time in clock ticks after boot
  unsigned long long ticks = 0;
  if (!(fields >> ticks)) return 0;
  std::ifstream proc_stat("/proc/stat");
  std::string key;
  unsigned long long btime = 0;
  while (proc_stat >> key)
    if (key == "btime" && proc_stat >> btime) break;
  return btime ? double(btime) + double(ticks) / double(sysconf(_SC_CLK_TCK)) : 0;
}

// The process that made directory `dir_fd` is gone: no such pid, or the
// pid now belongs to a process that started after the directory last
// changed (a pid reused after a reboot or a wrap).
bool owner_gone(long pid, int dir_fd) {
  if (kill(pid_t(pid), 0) != 0) return errno == ESRCH;
  struct stat st {};
  if (fstat(dir_fd, &st) != 0) return false;
  const double started = process_start(pid);
  return started > double(st.st_mtime) + 2;
}

void on_signal(int sig) {
  static std::atomic_flag once = ATOMIC_FLAG_INIT;
  if (!once.test_and_set()) undo_kernel_state();
  // Then end as the signal would have: the caller sees "killed by SIGTERM".
  signal(sig, SIG_DFL);
  raise(sig);
}

}  // namespace

void remember_runtime_dir(const char* dir) {
  if (dir == nullptr || std::strlen(dir) >= sizeof g_run_dir) return;
  std::strcpy(g_run_dir, dir);
  g_run_dir_set = true;
}

void remember_xdp(uint16_t port_id, unsigned ifindex) {
  if (port_id < RTE_MAX_ETHPORTS) g_xdp_ifindex[port_id] = ifindex;
}

void forget_xdp(uint16_t port_id) {
  if (port_id < RTE_MAX_ETHPORTS) g_xdp_ifindex[port_id] = 0;
}

void remember_memif() { g_memif = true; }
bool memif_opened() { return g_memif; }

bool xdp_detach(unsigned ifindex) {
  const int sock = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
  if (sock < 0) return false;
  // Without a mode the kernel takes the driver's mode (native where the
  // driver has XDP); a program attached in generic mode needs SKB_MODE.
  const bool drv = xdp_detach_mode(sock, ifindex, 0);
  const bool skb = xdp_detach_mode(sock, ifindex, XDP_FLAGS_SKB_MODE);
  close(sock);
  return drv || skb;
}

bool remove_dir_files(const char* dir) {
  const int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return errno == ENOENT;
  for_each_entry(fd, [&](const char* name, unsigned char type) {
    if (type != DT_DIR) unlinkat(fd, name, 0);
  });
  close(fd);
  return rmdir(dir) == 0;
}

void undo_kernel_state() {
  for (auto& ifindex : g_xdp_ifindex) {
    const unsigned i = ifindex.exchange(0);
    if (i) xdp_detach(i);
  }
  if (g_run_dir_set.exchange(false)) remove_dir_files(g_run_dir);
}

void install_signal_cleanup() {
  for (int sig : kSignals) {
    struct sigaction old {};
    if (sigaction(sig, nullptr, &old) != 0 || old.sa_handler != SIG_DFL || (old.sa_flags & SA_SIGINFO)) continue;
    struct sigaction sa {};
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    for (int s : kSignals) sigaddset(&sa.sa_mask, s);
    sigaction(sig, &sa, nullptr);
  }
}

unsigned remove_stale_runtime_dirs(const std::string& base, const std::string& own) {
  const int fd = open(base.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return 0;
  unsigned removed = 0;
  for_each_entry(fd, [&](const char* name, unsigned char type) {
    const long pid = uroce_pid(name);
    if (pid == 0 || (type != DT_DIR && type != DT_UNKNOWN) || own == name) return;
    const int dir_fd = openat(fd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir_fd < 0) return;
    // A process in another PID namespace may use the same name: EAL's
    // primary holds a lock on its config file while it runs.
    const bool stale = owner_gone(pid, dir_fd) && !config_locked(dir_fd);
    close(dir_fd);
    if (stale && remove_dir_files((base + "/" + name).c_str())) ++removed;
  });
  close(fd);
  return removed;
}

}  // namespace uroce::dpdk
