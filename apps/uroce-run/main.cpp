// SPDX-License-Identifier: BSD-3-Clause
// uroce-run [--dev SPEC] [--ip ADDR[,ADDR...]] [--mac MAC] [--mtu N] [--vlan ID] [--pcp N]
//           [--eal "ARGS"] [--config FILE] [--no-kernel-view] [--no-port-check] -- PROGRAM [ARGS...]
// uroce-run --daemon SOCKET [--config FILE] [--no-kernel-view] -- PROGRAM [ARGS...]
//
// Checks the settings, puts them in the UROCE_* variables the drop-in
// libibverbs reads, puts the drop-in's directory first in LD_LIBRARY_PATH
// and executes PROGRAM: an unmodified verbs program then finds uroce0.
// It first gives PROGRAM a private mount namespace with the devices'
// /dev/infiniband nodes and /sys/class/infiniband files, which UCX looks
// for (kernel_view.h): as root directly, as another user inside a user
// namespace where the kernel allows one; --no-kernel-view leaves them out.
// Exit 2 for a usage error and 1 for a port that cannot open (each port is
// opened once and closed again first; --no-port-check skips that), both
// before PROGRAM starts; 127 if it cannot start.
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "config.h"
#include "kernel_view.h"
#include "uroce/port/eal.h"
#include "uroce/port/endpoint.h"
#include "uroce/wire/eth.h"
#include "uroce/wire/ip_addr.h"

namespace {

const char kUsage[] =
    "usage: uroce-run [--dev SPEC] [--ip ADDR[,ADDR...]] [--mac MAC] [--mtu N] [--vlan ID] [--pcp N]\n"
    "                 [--eal \"ARGS\"] [--config FILE] [--no-kernel-view] [--no-port-check] -- PROGRAM [ARGS...]\n"
    "       uroce-run --daemon SOCKET [--config FILE] [--no-kernel-view] -- PROGRAM [ARGS...]\n"
    "Runs PROGRAM with uroce's libibverbs.so.1 in front of the system's: device uroce0 is\n"
    "the DPDK port SPEC (a PCI address or a vdev string such as net_af_packet0,iface=eth1)\n"
    "with address ADDR (IPv4 or IPv6; GID 1; more addresses are GIDs 2, 3, ...), its frames\n"
    "tagged with 802.1Q VLAN ID (0..4094) and priority N (0..7) when given.\n"
    "--config FILE describes more devices\n"
    "(docs/verbs-abi.md). With --daemon, uroce0 is a client of uroced at SOCKET: the daemon's\n"
    "port, address, MAC and MTU, and no EAL in PROGRAM (docs/daemon.md).\n"
    "Options left out keep the UROCE_* variables already set.\n"
    "PROGRAM runs in a private mount namespace (a user namespace too when not root) that adds\n"
    "/dev/infiniband/uroceN and /sys/class/infiniband/uroceN (UCX needs them);\n"
    "--no-kernel-view leaves them out. Each port is opened and closed once before PROGRAM\n"
    "starts, so one that cannot open is an error here (exit 1); --no-port-check skips that.\n";

struct Options {
  std::string dev, ip, mac, mtu, vlan, pcp, eal, config, daemon;
  bool dev_set = false, ip_set = false, mac_set = false, mtu_set = false, eal_set = false, config_set = false;
  bool vlan_set = false, pcp_set = false;
  bool daemon_set = false;
  bool kernel_view = true;
  bool port_check = true;
  std::vector<char*> program;
};

int usage_error(const std::string& msg) {
  std::fprintf(stderr, "uroce-run: %s\n%s", msg.c_str(), kUsage);
  return 2;
}

// "--name VALUE" or "--name=VALUE"; true when argv[i] is this option.
bool take(const char* name, int argc, char** argv, int& i, std::string& value, bool& set, std::string& error) {
  const std::string a = argv[i], n = name;
  if (a.rfind(n + "=", 0) == 0) {
    value = a.substr(n.size() + 1);
  } else if (a == n) {
    if (i + 1 >= argc) return error = n + " needs a value", true;
    value = argv[++i];
  } else {
    return false;
  }
  set = true;
  return true;
}

bool parse(int argc, char** argv, Options& o, std::string& error) {
  int i = 1;
  for (; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--") {
      ++i;
      break;
    }
    if (a == "-h" || a == "--help") return error = "help", false;
    if (a == "--no-kernel-view") {
      o.kernel_view = false;
      continue;
    }
    if (a == "--no-port-check") {
      o.port_check = false;
      continue;
    }
    if (take("--dev", argc, argv, i, o.dev, o.dev_set, error) || take("--ip", argc, argv, i, o.ip, o.ip_set, error) ||
        take("--mac", argc, argv, i, o.mac, o.mac_set, error) || take("--mtu", argc, argv, i, o.mtu, o.mtu_set, error) ||
        take("--vlan", argc, argv, i, o.vlan, o.vlan_set, error) ||
        take("--pcp", argc, argv, i, o.pcp, o.pcp_set, error) || take("--eal", argc, argv, i, o.eal, o.eal_set, error) ||
        take("--config", argc, argv, i, o.config, o.config_set, error) ||
        take("--daemon", argc, argv, i, o.daemon, o.daemon_set, error)) {
      if (!error.empty()) return false;
      continue;
    }
    if (a.size() > 1 && a[0] == '-') return error = "unknown option " + a, false;
    break;  // the program, without "--"
  }
  for (; i < argc; ++i) o.program.push_back(argv[i]);
  if (o.program.empty()) return error = "no program to run (give it after --)", false;
  o.program.push_back(nullptr);
  return true;
}

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

// uroced answers at `path`: connected and closed again at once (the daemon
// ends a client that leaves before HELLO), so a missing daemon is told
// before PROGRAM starts instead of as its first ibv_open_device failing.
bool daemon_answers(const std::string& path, std::string& error) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.empty()) return error = "--daemon needs a socket path", false;
  if (path.size() >= sizeof addr.sun_path) return error = "--daemon: socket path too long: " + path, false;
  std::memcpy(addr.sun_path, path.c_str(), path.size());
  const int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  if (fd < 0) return error = std::string("socket: ") + std::strerror(errno), false;
  const bool ok = connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  const int err = errno;
  close(fd);
  if (!ok) return error = "--daemon: no uroced at " + path + ": " + std::strerror(err), false;
  return true;
}

// The settings as the drop-in will see them, checked the way it checks
// them (lib/abi/ibverbs/config.cpp) so mistakes show before PROGRAM runs.
bool validate(const Options& o, std::string& error) {
  const std::string daemon = o.daemon_set ? o.daemon : env("UROCE_DAEMON");
  if (!daemon.empty() || o.daemon_set) {
    if (o.dev_set || o.ip_set || o.mac_set || o.mtu_set || o.vlan_set || o.pcp_set || o.eal_set)
      return error = "--daemon takes no --dev, --ip, --mac, --mtu, --vlan, --pcp or --eal: the port is the daemon's",
             false;
    return daemon_answers(daemon, error);
  }
  const std::string dev = o.dev_set ? o.dev : env("UROCE_DEV");
  const std::string ip = o.ip_set ? o.ip : env("UROCE_IP");
  const std::string mac = o.mac_set ? o.mac : env("UROCE_MAC");
  const std::string mtu = o.mtu_set ? o.mtu : env("UROCE_MTU");
  const std::string config = o.config_set ? o.config : env("UROCE_CONFIG");
  if (!config.empty() && !std::ifstream(config)) return error = "--config: cannot read " + config, false;
  if (dev.empty() && ip.empty() && config.empty())
    return error = "no device: give --dev and --ip (or --config)", false;
  if (!dev.empty() || !ip.empty()) {
    if (dev.empty()) return error = "--ip without --dev", false;
    if (dev.find_first_of(" \t") != std::string::npos || dev.front() == ',' || dev.back() == ',')
      return error = "--dev '" + dev + "' is not a PCI address or vdev string", false;
    if (ip.empty()) return error = "--dev without --ip", false;
  }
  if (!ip.empty() && !uroce::abi::parse_addresses(ip, error)) return error = "--ip: " + error, false;
  uroce::wire::MacAddr m;
  if (!mac.empty() && !uroce::wire::MacAddr::parse(mac, m))
    return error = "--mac '" + mac + "' is not a MAC address", false;
  if (!mtu.empty()) {
    char* end = nullptr;
    const long v = std::strtol(mtu.c_str(), &end, 10);
    if (*end != '\0' || v < 68 || v > 9600) return error = "--mtu '" + mtu + "' is not in 68..9600", false;
  }
  auto in_range = [](const std::string& text, long max) {
    char* end = nullptr;
    const long v = std::strtol(text.c_str(), &end, 10);
    return !text.empty() && *end == '\0' && v >= 0 && v <= max;
  };
  if (o.vlan_set && !in_range(o.vlan, 4094)) return error = "--vlan '" + o.vlan + "' is not a VLAN id (0..4094)", false;
  if (o.pcp_set && !in_range(o.pcp, 7)) return error = "--pcp '" + o.pcp + "' is not an 802.1p priority (0..7)", false;
  return true;
}

// Opens each device's port in a child process and closes it again, so a
// port that cannot open (no such interface or PCI device, a driver that
// refuses it, no permission) stops uroce-run with the reason before
// PROGRAM starts instead of as PROGRAM's first ibv_open_device failing.
// Only the child runs EAL: PROGRAM starts as it would without the check.
// memif ports are left to PROGRAM: connecting to the peer and leaving
// again would show the peer a link going down.
bool ports_open(std::string& error) {
  uroce::abi::Settings settings;
  if (!uroce::abi::load_settings(settings, error)) return false;
  std::vector<const uroce::abi::DeviceSettings*> ports;
  for (const auto& d : settings.devices)
    if (d.daemon.empty() && d.dev.rfind("net_memif", 0) != 0) ports.push_back(&d);
  if (ports.empty()) return true;
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return error = std::string("pipe: ") + std::strerror(errno), false;
  std::fflush(nullptr);
  const pid_t child = fork();
  if (child < 0) {
    close(fds[0]);
    close(fds[1]);
    return error = std::string("fork: ") + std::strerror(errno), false;
  }
  if (child == 0) {
    close(fds[0]);
    alarm(60);
    // Quiet: the reason travels through the pipe, and notices are
    // PROGRAM's to print when it opens the port. A state directory that
    // cannot exist keeps the hugepage notice due for PROGRAM.
    if (const int null = open("/dev/null", O_WRONLY | O_CLOEXEC); null >= 0) dup2(null, STDERR_FILENO);
    setenv("UROCE_STATE_DIR", "/proc/self/uroce-port-check", 1);
    std::string why;
    for (const auto* d : ports) {
      uroce::EndpointConfig cfg;
      cfg.dev = d->dev;
      cfg.ip = d->ip;
      cfg.mac = d->mac;
      cfg.mtu = d->mtu;
      uroce::set_vlan(cfg.device, d->vlan, d->pcp);
      cfg.eal_args = settings.eal_args;
      cfg.device.name = d->name;
      if (!uroce::Endpoint::open(cfg, why)) {
        why = d->name + " (" + d->dev + "): " + why;
        if (write(fds[1], why.data(), why.size()) < 0) _exit(3);
        uroce::eal_shutdown();
        _exit(1);
      }
    }
    uroce::eal_shutdown();
    _exit(0);
  }
  close(fds[1]);
  std::string why;
  char buf[512];
  ssize_t n;
  while ((n = read(fds[0], buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR))
    if (n > 0) why.append(buf, size_t(n));
  close(fds[0]);
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return true;
  if (why.empty())
    why = WIFSIGNALED(status) ? "the check of the ports died of signal " + std::to_string(WTERMSIG(status))
                              : "the check of the ports failed";
  return error = "cannot open " + why, false;
}

bool has_shim(const std::string& dir) { return !dir.empty() && access((dir + "/libibverbs.so.1").c_str(), R_OK) == 0; }

// The drop-in's directory: UROCE_RUN_LIBDIR, else the build tree next to
// this program, else the installed one.
std::string shim_dir() {
  if (has_shim(env("UROCE_RUN_LIBDIR"))) return env("UROCE_RUN_LIBDIR");
  char self[4096];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n > 0) {
    self[n] = '\0';
    std::string dir(self);
    dir = dir.substr(0, dir.rfind('/'));
    const std::string build = dir + "/../../lib/abi/ibverbs";
    if (has_shim(build)) return build;
  }
  return has_shim(UROCE_RUN_INSTALLED_LIBDIR) ? UROCE_RUN_INSTALLED_LIBDIR : "";
}

// The devices as the drop-in will list them; a program that cannot see
// them in /dev and /sys still runs (only UCX-like programs miss them), so
// a failure is a warning.
void enter_view() {
  uroce::abi::Settings settings;
  std::string error;
  if (!uroce::abi::load_settings(settings, error)) return;  // the drop-in reports it
  std::vector<uroce::run::ViewDevice> devices;
  for (const auto& d : settings.devices) {
    const int addresses = d.daemon.empty() ? 1 + int(std::count(d.ip.begin(), d.ip.end(), ',')) : 1;
    devices.push_back({d.name, uroce::run::netdev_of(d.dev), 1 + addresses});
  }
  switch (uroce::run::enter_kernel_view(devices, error)) {
    case uroce::run::ViewResult::entered:
      break;
    case uroce::run::ViewResult::refused:
      std::fprintf(stderr,
                   "uroce-run: no /dev/infiniband view for UCX: the kernel gives this user no user namespace "
                   "(%s); running as with --no-kernel-view\n",
                   error.c_str());
      break;
    case uroce::run::ViewResult::failed:
      std::fprintf(stderr, "uroce-run: warning: no /dev/infiniband and /sys/class/infiniband view: %s\n",
                   error.c_str());
      break;
  }
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  std::string error;
  if (!parse(argc, argv, o, error)) {
    if (error == "help") return std::fputs(kUsage, stdout), 0;
    return usage_error(error);
  }
  if (!validate(o, error)) return usage_error(error);
  const std::string dir = shim_dir();
  if (dir.empty()) {
    std::fprintf(stderr, "uroce-run: uroce's libibverbs.so.1 not found (looked in %s)\n", UROCE_RUN_INSTALLED_LIBDIR);
    return 127;
  }
  if (o.dev_set) setenv("UROCE_DEV", o.dev.c_str(), 1);
  if (o.ip_set) setenv("UROCE_IP", o.ip.c_str(), 1);
  if (o.mac_set) setenv("UROCE_MAC", o.mac.c_str(), 1);
  if (o.mtu_set) setenv("UROCE_MTU", o.mtu.c_str(), 1);
  if (o.vlan_set) setenv("UROCE_VLAN", o.vlan.c_str(), 1);
  if (o.pcp_set) setenv("UROCE_PCP", o.pcp.c_str(), 1);
  if (o.eal_set) setenv("UROCE_EAL", o.eal.c_str(), 1);
  if (o.config_set) setenv("UROCE_CONFIG", o.config.c_str(), 1);
  if (o.daemon_set) {
    // The daemon's device only: a port from the caller's environment would
    // contradict it (the drop-in refuses both).
    setenv("UROCE_DAEMON", o.daemon.c_str(), 1);
    for (const char* v : {"UROCE_DEV", "UROCE_IP", "UROCE_MAC", "UROCE_MTU", "UROCE_VLAN", "UROCE_PCP"}) unsetenv(v);
  }
  if (o.port_check && !ports_open(error)) {
    std::fprintf(stderr, "uroce-run: %s\n", error.c_str());
    return 1;
  }
  if (o.kernel_view) enter_view();
  const std::string old = env("LD_LIBRARY_PATH");
  setenv("LD_LIBRARY_PATH", (old.empty() ? dir : dir + ":" + old).c_str(), 1);
  execvp(o.program[0], o.program.data());
  std::fprintf(stderr, "uroce-run: cannot run %s: %s\n", o.program[0], std::strerror(errno));
  return 127;
}
