// SPDX-License-Identifier: BSD-3-Clause
// uroced: owns a DPDK port, runs its engine on a thread of its own, and
// serves client processes over a Unix socket and shared memory
// (docs/daemon.md).
#include <sys/resource.h>

#include <CLI/CLI.hpp>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_lcore.h>
#include <rte_pdump.h>

#include <csignal>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "app_support.h"
#include "log.h"
#include "notify.h"
#include "server.h"
#include "settings.h"
#include "telemetry.h"
#include "uroce/port/dpdk_port.h"
#include "uroce/port/endpoint.h"

namespace {

volatile std::sig_atomic_t g_stop = 0;
void on_signal(int) { g_stop = 1; }

// Command-line options that override a setting of the file when given.
class Overrides {
 public:
  explicit Overrides(CLI::App& app) : app_(app) {}
  template <typename T>
  CLI::Option* add(const char* name, T uroced::Settings::*field, const char* help) {
    CLI::Option* o = app_.add_option(name, cli_.*field, help);
    apply_.push_back([this, o, field](uroced::Settings& s) {
      if (*o) s.*field = cli_.*field;
    });
    return o;
  }
  void apply(uroced::Settings& s) const {
    for (const auto& f : apply_) f(s);
  }

 private:
  CLI::App& app_;
  uroced::Settings cli_;
  std::vector<std::function<void(uroced::Settings&)>> apply_;
};

void add_options(Overrides& o) {
  using S = uroced::Settings;
  o.add("--dev", &S::dev, "DPDK port: a PCI address or a vdev string (net_af_packet0,iface=eth1)");
  o.add("--ip", &S::ip, "the port's RoCE address (IPv4 or IPv6)");
  o.add("--mac", &S::mac, "override the port's MAC address");
  o.add("--mtu", &S::mtu, "Ethernet MTU asked of the port (default 1500)");
  o.add("--vlan", &S::vlan, "802.1Q: the port's frames carry this VLAN id (0..4094; default untagged)")
      ->check(CLI::Range(0, 4094));
  o.add("--pcp", &S::pcp, "802.1Q: and this priority, 0..7 (alone: VLAN id 0, priority tagging)")->check(CLI::Range(0, 7));
  o.add("--pcap", &S::pcap, "write every frame the port sends and receives to this pcap file");
  o.add("--rx-interrupt", &S::rx_interrupt,
        "auto: the idle engine sleeps on the port's receive interrupt where it has one; off: it naps");
  o.add("--socket", &S::socket, "control socket (default /run/uroce/uroced.sock)");
  o.add("--socket-mode", &S::socket_mode, "the socket's permissions, octal (default 0660)");
  o.add("--socket-group", &S::socket_group, "the socket's group (name or number)");
  o.add("--eal", &S::eal, "extra EAL arguments, in one string");
  o.add("--engine-cpu", &S::engine_cpu, "pin the engine thread to this CPU (default: not pinned)");
  o.add("--idle-sleep-us", &S::idle_sleep_us,
        "longest nap of the idle engine between looks at the port, 0..50000 (default 1000)");
  o.add("--hugepage-regions", &S::hugepage_regions,
        "auto: alloc_mr regions of 2 MiB or more on huge pages, DMA-mapped for the NIC, when free; off "
        "(for untrusted clients: no huge pages, reg_mr refuses a client's)");
  o.add("--log-level", &S::log_level, "uroced's messages: error, warning, notice, info (default), debug");
  o.add("--file-prefix", &S::file_prefix, "EAL's file prefix, dpdk-telemetry.py's -f (default uroced)");
  o.add("--lcores", &S::lcores, "CPUs the daemon runs on, a list such as 2-3 (EAL's main lcore)");
  o.add("--cc", &S::cc, "congestion control: none | dcqcn (ConnectX defaults) | dcqcn-paper");
  o.add("--cc-config", &S::cc_config, "congestion-control settings file (config/dcqcn-*.conf)");
}

// What no parser checks; 2 (with a message) or -1 to go on.
int finish_settings(uroced::Settings& s) {
  std::string error;
  if (!uroced::check_settings(s, error) || !uroced::congestion_control(s, s.cc_resolved, error)) {
    std::fprintf(stderr, "uroced: %s\n", error.c_str());
    return 2;
  }
  for (size_t i = 0; i < s.more_ports.size(); ++i)
    if (!uroced::congestion_control(s.more_ports[i], s.more_ports[i].cc_resolved, error)) {
      std::fprintf(stderr, "uroced: [port] %zu: %s\n", i + 2, error.c_str());
      return 2;
    }
  if (s.dev.empty() || s.ip.empty()) {
    std::fprintf(stderr, "uroced: no port: give --dev and --ip, or [port] dev and ip in --config\n");
    return 2;
  }
  return -1;
}

// The configuration file first, then what the command line sets on top:
// -1 to go on, else the exit status.
int parse(int argc, char** argv, uroced::Settings& s) {
  CLI::App app{
      "uroced: owns a DPDK port and runs its RoCEv2 engine for client processes, which reach it over a Unix\n"
      "socket (control) and shared memory (rings and registered memory).\n"
      "  uroced --config FILE\n"
      "  uroced --dev SPEC --ip ADDR [--mac MAC] [--socket PATH] [--eal \"ARGS\"] [--pcap FILE]"};
  app.set_version_flag("--version", "uroced " UROCE_VERSION);
  std::string config, uids;
  std::vector<std::string> cc_params;
  app.add_option("--config", config, "INI file: [daemon], [port], [limits] (docs/operations.md)");
  Overrides overrides(app);
  add_options(overrides);
  auto* allow = app.add_option("--allow-uids", uids, "uids allowed besides root and the daemon's own (comma list)");
  app.add_option("--cc-param", cc_params, "one DCQCN parameter, NAME=VALUE with mlx5's names (repeatable)");
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
  overrides.apply(s);
  s.cc_params.insert(s.cc_params.end(), cc_params.begin(), cc_params.end());  // after the file's
  if (*allow && !uroced::parse_uids(uids, s.allow_uids)) {
    std::fprintf(stderr, "uroced: --allow-uids '%s' is not a list of uids\n", uids.c_str());
    return 2;
  }
  return finish_settings(s);
}

// Port `index` and its device (uroce<index>), its engine running on a
// thread of its own; the first opens the EAL (for every port).
std::unique_ptr<uroce::Endpoint> open_endpoint(const uroced::Settings& settings, const uroced::PortSettings& port,
                                               size_t index) {
  uroce::EndpointConfig ec;
  ec.dev = port.dev;
  ec.ip = port.ip;
  ec.mac = port.mac;
  ec.mtu = port.mtu;
  ec.pcap = port.pcap;
  ec.eal_args = uroced::eal_args(settings);
  ec.device.name = "uroce" + std::to_string(index);
  uroce::set_vlan(ec.device, port.vlan, port.pcp);
  ec.device.cc = port.cc_resolved;
  ec.device.idle_sleep_max_us = settings.idle_sleep_us;
  ec.rx_interrupts = port.rx_interrupt == "auto";  // where the port has one (net_tap, mlx5)
  std::string error;
  auto endpoint = uroce::Endpoint::open(ec, error);
  if (!endpoint) {
    UROCED_LOG(ERR, "%s", error.c_str());
    return nullptr;
  }
  // EAL writes its log to stderr and to syslog; under systemd both reach the
  // journal, and every line would show twice. stderr only, unless asked.
  if (settings.eal.find("--syslog") == std::string::npos) rte_openlog_stream(stderr);
  // Two clients of this daemon talk to each other through the engine's
  // loopback: its own addresses resolve to its own MAC.
  for (const auto& gid : endpoint->device().gids())
    endpoint->device().add_neighbor(gid, endpoint->packet_port().mac());
  if (!endpoint->device().start_engine_thread(settings.engine_cpu, error, uroce::Device::Progress::kCallersDrive)) {
    UROCED_LOG(ERR, "engine thread: %s", error.c_str());
    return nullptr;
  }
  return endpoint;
}

// DPDK's capture framework: dpdk-dumpcap (and dpdk-pdump), secondary
// processes of this daemon's file prefix, ask it to copy its ports' frames
// to them. Only a primary whose memory a secondary can map can serve them.
bool start_capture_service() {
  if (rte_eal_process_type() != RTE_PROC_PRIMARY || !rte_eal_has_hugepages()) {
    UROCED_LOG(INFO, "dpdk-dumpcap: not available (it needs hugepages and the daemon as a multi-process primary)");
    return false;
  }
  if (rte_pdump_init() != 0) {
    UROCED_LOG(WARNING, "dpdk-dumpcap: the capture framework did not start: %s", rte_strerror(rte_errno));
    return false;
  }
  // The prefix EAL took (an --file-prefix in eal wins over the setting).
  const std::string dir = rte_eal_get_runtime_dir();
  UROCED_LOG(INFO, "dpdk-dumpcap --file-prefix=%s can capture the port", dir.substr(dir.rfind('/') + 1).c_str());
  return true;
}

void prepare_process() {
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
}

// Listens, tells systemd, serves until a signal; false if it cannot listen.
bool serve(const std::vector<std::unique_ptr<uroce::Endpoint>>& endpoints,
           const std::vector<uroced::PortSettings>& ports, const uroced::Settings& settings) {
  uroced::Server server(settings);
  for (size_t i = 0; i < endpoints.size(); ++i) {
    uroce::Endpoint& endpoint = *endpoints[i];
    const uroced::PortSettings& port = ports[i];
    auto view = [&endpoint, &port](uroced::PortView& p) {
      uroce::Device& dev = endpoint.device();
      p.name = dev.name();
      p.dev = port.dev;
      p.port_id = endpoint.dpdk_port().port_id();
      p.mac = dev.mac().to_string();
      p.mtu = dev.mtu();
      uroce::DeviceConfig tag;
      uroce::set_vlan(tag, port.vlan, port.pcp);
      p.vlan = tag.vlan_id;
      p.pcp = tag.vlan_pcp;
      for (const auto& gid : dev.gids()) p.gids.push_back(gid.to_string());
      p.link_up = endpoint.dpdk_port().link_up();
      p.rx_interrupt = endpoint.dpdk_port().has_rx_interrupt();
      p.rx_interrupt_wakeups = endpoint.dpdk_port().rx_interrupt_wakeups();
    };
    // The capture is written out whenever the daemon goes idle, so it can
    // be read while the daemon runs.
    std::function<void()> flush;
    if (!port.pcap.empty()) flush = [&endpoint] {
      std::string ignored;
      endpoint.flush_capture(ignored);
    };
    server.add_port(endpoint.device(), port.socket, endpoint.dpdk_port().port_id(),
                    uroce::cc::describe(port.cc_resolved), view, flush);
  }
  std::string error;
  uroced::Telemetry& telemetry = uroced::Telemetry::instance();
  if (!telemetry.start(error)) {
    UROCED_LOG(ERR, "%s", error.c_str());
    return false;
  }
  server.serve_telemetry(telemetry);
  if (!server.listen(error)) {
    UROCED_LOG(ERR, "%s", error.c_str());
    return false;
  }
  std::string sockets;
  for (size_t i = 0; i < endpoints.size(); ++i) {
    uroce::Endpoint& endpoint = *endpoints[i];
    const uroced::PortSettings& port = ports[i];
    // One port: the lines as they always were; several: each names its device.
    const std::string who = endpoints.size() == 1 ? "" : endpoint.device().name() + ": ";
    UROCED_LOG(INFO, "%scongestion control: %s", who.c_str(), uroce::cc::describe(port.cc_resolved).c_str());
    if (endpoint.dpdk_port().has_rx_interrupt())
      UROCED_LOG(INFO, "%sengine: sleeps on the port's receive interrupt when idle (naps of up to %u us first)",
                 who.c_str(), settings.idle_sleep_us);
    else
      UROCED_LOG(INFO, "%sengine: naps of up to %u us when idle (idle_sleep_us)", who.c_str(), settings.idle_sleep_us);
    UROCED_LOG(NOTICE, "%s on %s, %s: listening on %s", endpoint.device().name().c_str(), port.dev.c_str(),
               port.ip.c_str(), port.socket.c_str());
    sockets += (i ? ", " : "") + port.socket;
  }
  // Type=notify: clients may connect from now on.
  const std::string status = "READY=1\nSTATUS=listening on " + sockets;
  if (!uroced::notify_service_manager(status.c_str())) UROCED_LOG(WARNING, "NOTIFY_SOCKET: %s", std::strerror(errno));
  server.run(g_stop);
  uroced::notify_service_manager("STOPPING=1\nSTATUS=stopping: tearing down the clients");
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  uroced::Settings settings;
  if (const int rc = parse(argc, argv, settings); rc >= 0) return rc;
  const std::vector<uroced::PortSettings> ports = uroced::all_ports(settings);
  std::vector<std::unique_ptr<uroce::Endpoint>> endpoints;
  // A port that cannot open, or a daemon that cannot listen, ends the
  // process: the engines already running stop first, before the EAL goes.
  auto give_up = [&endpoints] {
    for (auto& endpoint : endpoints)
      if (endpoint) endpoint->device().stop_engine_thread();
    uroce::app::exit_now(1);
  };
  for (size_t i = 0; i < ports.size(); ++i) {
    endpoints.push_back(open_endpoint(settings, ports[i], i));
    if (!endpoints.back()) give_up();
  }
  if (ports.size() > 1 && settings.engine_cpu >= 0)
    UROCED_LOG(WARNING, "engine_cpu = %d pins all %zu ports' engines to that one CPU", settings.engine_cpu,
               ports.size());
  // lcores named in eal without a worker per port: the engines past the
  // workers run on threads registered with DPDK, which dpdk-dumpcap cannot
  // serve.
  unsigned workers = 0;
  unsigned lcore;
  RTE_LCORE_FOREACH_WORKER(lcore) ++workers;  // EAL's own, not the threads registered with it
  if (workers < ports.size())
    UROCED_LOG(WARNING, "eal gives %u worker lcore(s) for %zu port(s): the engine of each port past them runs on a "
               "thread of its own, not an EAL lcore (no dpdk-dumpcap for that port)",
               workers, ports.size());
  const bool capture_service = start_capture_service();
  prepare_process();
  if (!serve(endpoints, ports, settings)) give_up();
  // A dumpcap still attached is told to stop before the ports go.
  if (capture_service) rte_pdump_uninit();
  for (auto& endpoint : endpoints) endpoint->device().stop_engine_thread();
  endpoints.clear();
  uroce::app::exit_now(0);
}
