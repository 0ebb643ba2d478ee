// SPDX-License-Identifier: BSD-3-Clause
// uroced: owns a DPDK port, runs its engine on a thread of its own, and
// serves client processes over a Unix socket and shared memory
// (docs/daemon.md).
#include <sys/resource.h>

#include <CLI/CLI.hpp>

#include <csignal>
#include <cstdio>
#include <cstring>

#include "app_support.h"
#include "log.h"
#include "notify.h"
#include "server.h"
#include "settings.h"
#include "uroce/port/endpoint.h"

namespace {

volatile std::sig_atomic_t g_stop = 0;
void on_signal(int) { g_stop = 1; }

// The configuration file first, then what the command line sets on top.
int parse(int argc, char** argv, uroced::Settings& s) {
  CLI::App app{
      "uroced: owns a DPDK port and runs its RoCEv2 engine for client processes, which reach it over a Unix\n"
      "socket (control) and shared memory (rings and registered memory).\n"
      "  uroced --config FILE\n"
      "  uroced --dev SPEC --ip ADDR [--mac MAC] [--socket PATH] [--eal \"ARGS\"] [--pcap FILE]"};
  app.set_version_flag("--version", "uroced " UROCE_VERSION);
  std::string config, uids;
  uroced::Settings cli;
  app.add_option("--config", config, "INI file: [daemon], [port], [limits] (docs/daemon.md)");
  auto* dev = app.add_option("--dev", cli.dev, "DPDK port: a PCI address or a vdev string (net_af_packet0,iface=eth1)");
  auto* ip = app.add_option("--ip", cli.ip, "the port's RoCE address (IPv4 or IPv6)");
  auto* mac = app.add_option("--mac", cli.mac, "override the port's MAC address");
  auto* mtu = app.add_option("--mtu", cli.mtu, "Ethernet MTU asked of the port (default 1500)");
  auto* pcap = app.add_option("--pcap", cli.pcap, "write every frame the port sends and receives to this pcap file");
  auto* sock = app.add_option("--socket", cli.socket, "control socket (default /run/uroce/uroced.sock)");
  auto* mode = app.add_option("--socket-mode", cli.socket_mode, "the socket's permissions, octal (default 0660)");
  auto* group = app.add_option("--socket-group", cli.socket_group, "the socket's group (name or number)");
  auto* allow = app.add_option("--allow-uids", uids, "uids allowed besides root and the daemon's own (comma list)");
  auto* eal = app.add_option("--eal", cli.eal, "extra EAL arguments, in one string");
  auto* cpu = app.add_option("--engine-cpu", cli.engine_cpu, "pin the engine thread to this CPU (default: not pinned)");
  auto* level = app.add_option("--log-level", cli.log_level, "uroced's messages: error, warning, notice, info (default), debug");
  auto* lcores = app.add_option("--lcores", cli.lcores, "CPUs the daemon runs on, a list such as 2-3 (EAL's main lcore)");
  auto* cc = app.add_option("--cc", cli.cc, "congestion control: none | dcqcn (ConnectX defaults) | dcqcn-paper");
  auto* cc_config = app.add_option("--cc-config", cli.cc_config, "congestion-control settings file (config/dcqcn-*.conf)");
  app.add_option("--cc-param", cli.cc_params, "one DCQCN parameter, NAME=VALUE with mlx5's names (repeatable)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  std::string error;
  if (!config.empty() && !uroced::load_config(config, s, error)) {
    std::fprintf(stderr, "uroced: %s\n", error.c_str());
    return 2;
  }
  if (*dev) s.dev = cli.dev;
  if (*ip) s.ip = cli.ip;
  if (*mac) s.mac = cli.mac;
  if (*mtu) s.mtu = cli.mtu;
  if (*pcap) s.pcap = cli.pcap;
  if (*sock) s.socket = cli.socket;
  if (*mode) s.socket_mode = cli.socket_mode;
  if (*group) s.socket_group = cli.socket_group;
  if (*eal) s.eal = cli.eal;
  if (*cpu) s.engine_cpu = cli.engine_cpu;
  if (*level) s.log_level = cli.log_level;
  if (*lcores) s.lcores = cli.lcores;
  if (*cc) s.cc = cli.cc;
  if (*cc_config) s.cc_config = cli.cc_config;
  s.cc_params.insert(s.cc_params.end(), cli.cc_params.begin(), cli.cc_params.end());
  if (*allow && !uroced::parse_uids(uids, s.allow_uids)) {
    std::fprintf(stderr, "uroced: --allow-uids '%s' is not a list of uids\n", uids.c_str());
    return 2;
  }
  if (!uroced::check_settings(s, error)) {
    std::fprintf(stderr, "uroced: %s\n", error.c_str());
    return 2;
  }
  if (!uroced::congestion_control(s, s.cc_resolved, error)) {
    std::fprintf(stderr, "uroced: %s\n", error.c_str());
    return 2;
  }
  if (s.dev.empty() || s.ip.empty()) {
    std::fprintf(stderr, "uroced: no port: give --dev and --ip, or [port] dev and ip in --config\n");
    return 2;
  }
  return -1;
}

}  // namespace

int main(int argc, char** argv) {
  uroced::Settings settings;
  if (const int rc = parse(argc, argv, settings); rc >= 0) return rc;

  uroce::EndpointConfig ec;
  ec.dev = settings.dev;
  ec.ip = settings.ip;
  ec.mac = settings.mac;
  ec.mtu = settings.mtu;
  ec.pcap = settings.pcap;
  ec.eal_args = uroced::eal_args(settings);
  ec.device.cc = settings.cc_resolved;
  std::string error;
  auto endpoint = uroce::Endpoint::open(ec, error);
  if (!endpoint) {
    UROCED_LOG(ERR, "%s", error.c_str());
    uroce::app::exit_now(1);
  }
  // EAL writes its log to stderr and to syslog; under systemd both reach the
  // journal, and every line would show twice. stderr only, unless asked.
  if (settings.eal.find("--syslog") == std::string::npos) rte_openlog_stream(stderr);
  // Two clients of this daemon talk to each other through the engine's
  // loopback: its own addresses resolve to its own MAC.
  for (const auto& gid : endpoint->device().gids())
    endpoint->device().add_neighbor(gid, endpoint->packet_port().mac());
  if (!endpoint->device().start_engine_thread(settings.engine_cpu, error)) {
    UROCED_LOG(ERR, "engine thread: %s", error.c_str());
    uroce::app::exit_now(1);
  }
  // Each client holds a few descriptors in the daemon (socket, arena,
  // doorbell, event pipe, one per completion channel): the soft limit's
  // usual 1024 would run out at a few hundred clients.
  if (rlimit nofile{}; getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur < nofile.rlim_max) {
    nofile.rlim_cur = nofile.rlim_max;
    setrlimit(RLIMIT_NOFILE, &nofile);
  }
  struct sigaction sa {};
  sa.sa_handler = on_signal;  // no SA_RESTART: epoll_wait returns at once
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  std::signal(SIGPIPE, SIG_IGN);
  {
    uroced::Server server(endpoint->device(), settings);
    if (!server.listen(error)) {
      UROCED_LOG(ERR, "%s", error.c_str());
      uroce::app::exit_now(1);
    }
    UROCED_LOG(INFO, "congestion control: %s", uroce::cc::describe(settings.cc_resolved).c_str());
    UROCED_LOG(NOTICE, "%s on %s, %s: listening on %s", endpoint->device().name().c_str(),
                 settings.dev.c_str(), settings.ip.c_str(), settings.socket.c_str());
    // Type=notify: clients may connect from now on.
    const std::string status = "READY=1\nSTATUS=listening on " + settings.socket;
    if (!uroced::notify_service_manager(status.c_str())) UROCED_LOG(WARNING, "NOTIFY_SOCKET: %s", std::strerror(errno));
    // The capture is written out whenever the daemon goes idle, so it can
    // be read while the daemon runs.
    if (!settings.pcap.empty()) server.on_idle([&endpoint] {
      std::string ignored;
      endpoint->flush_capture(ignored);
    });
    server.run(g_stop);
    uroced::notify_service_manager("STOPPING=1\nSTATUS=stopping: tearing down the clients");
  }
  endpoint->device().stop_engine_thread();
  endpoint.reset();
  uroce::app::exit_now(0);
}
