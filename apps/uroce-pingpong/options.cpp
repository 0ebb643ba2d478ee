// SPDX-License-Identifier: BSD-3-Clause
#include "options.h"

#include <CLI/CLI.hpp>

#include <cmath>
#include <cstdio>

#include "uroce/exchange/pingpong.h"
#include "uroce/wire/eth.h"
#include "uroce/wire/ip_addr.h"

namespace uroce::pingpong {
namespace {

ibv_mtu to_enum(uint32_t mtu) {
  switch (mtu) {
    case 256: return IBV_MTU_256;
    case 512: return IBV_MTU_512;
    case 2048: return IBV_MTU_2048;
    case 4096: return IBV_MTU_4096;
    default: return IBV_MTU_1024;
  }
}

// The flags of rdma-core's tools that change nothing here, or that we
// refuse: each ignored one gets one line on stderr saying why.
struct RdmaCoreFlags {
  bool odp = false, iodp = false, prefetch = false, ts = false, dm = false, new_send = false;
};

const char* tool_of(Mode m) {
  switch (m) {
    case Mode::uc: return "ibv_uc_pingpong";
    case Mode::ud: return "ibv_ud_pingpong";
    case Mode::srq: return "ibv_srq_pingpong";
    case Mode::rc: break;
  }
  return "ibv_rc_pingpong";
}

int refuse(const char* text) {
  std::fprintf(stderr, "uroce-pingpong: %s\n", text);
  return 2;
}

// -1 to go on, else the exit status.
int check_rdma_core_flags(const Options& o, const RdmaCoreFlags& f) {
  // The flags the emulated tool itself lacks (its getopt refuses them;
  // uc_pingpong has none of these).
  const struct {
    bool set;
    const char* name;
    bool in_ud, in_srq;
  } own[] = {{f.odp, "-o/--odp", false, true},          {f.iodp, "-O/--iodp", false, false},
             {f.prefetch, "-P/--prefetch", false, false}, {f.ts, "-t/--ts", false, false},
             {f.dm, "-j/--dm", false, false},             {f.new_send, "-N/--new_send", false, false}};
  for (const auto& x : own) {
    if (!x.set || o.mode == Mode::rc || (o.mode == Mode::ud && x.in_ud) || (o.mode == Mode::srq && x.in_srq)) continue;
    std::fprintf(stderr, "uroce-pingpong: %s is not an option of %s\n", x.name, tool_of(o.mode));
    return 2;
  }
  if (f.ts) return refuse("-t/--ts is not supported: uroce completions carry no timestamp");
  // ibv_rc_pingpong's own checks, in its words.
  if (f.prefetch && !f.odp && !f.iodp) return refuse("prefetch is valid only with on-demand memory region");
  if (f.dm && (f.odp || f.iodp)) return refuse("DM memory region can't be on demand");
  if (f.odp) std::fprintf(stderr, "uroce-pingpong: -o/--odp ignored: uroce registers all memory up front\n");
  if (f.iodp) std::fprintf(stderr, "uroce-pingpong: -O/--iodp ignored: uroce registers all memory up front\n");
  if (f.prefetch) std::fprintf(stderr, "uroce-pingpong: -P/--prefetch ignored: there is no on-demand MR to prefetch\n");
  if (f.dm) std::fprintf(stderr, "uroce-pingpong: -j/--dm ignored: uroce has no device memory; the buffer stays in host memory\n");
  if (f.new_send)
    std::fprintf(stderr, "uroce-pingpong: -N/--new_send ignored: uroce has one way to post a send; the SENDs are the same\n");
  return -1;
}

// A malformed --ip or --mac is a usage error, found before any port opens.
// --daemon: the daemon's port.
int check_daemon(const Options& o) {
  if (o.daemon.empty()) {
    if (!o.dev.empty() && !o.ip.empty()) return -1;
    std::fprintf(stderr, "uroce-pingpong: --%s is required (or --daemon SOCKET instead of --dev and --ip)\n",
                 o.dev.empty() ? "dev" : "ip");
    return 2;
  }
  if (!o.mac.empty() || !o.eal.empty() || !o.pcap.empty()) {
    std::fprintf(stderr, "uroce-pingpong: --daemon: --mac, --eal and --pcap belong to the daemon's port\n");
    return 2;
  }
  return -1;
}

int check_addresses(const Options& o) {
  wire::IpAddr ip;
  if (!wire::IpAddr::parse(o.ip, ip)) {
    std::fprintf(stderr, "uroce-pingpong: --ip %s: not an IPv4 or IPv6 address (this endpoint's RoCE address)\n",
                 o.ip.c_str());
    return 2;
  }
  wire::MacAddr mac;
  if (!o.mac.empty() && !wire::MacAddr::parse(o.mac, mac)) {
    std::fprintf(stderr, "uroce-pingpong: --mac %s: not a MAC address (six hex bytes, 02:00:00:00:00:01)\n",
                 o.mac.c_str());
    return 2;
  }
  return -1;
}

}  // namespace

int parse_options(int argc, char** argv, Options& o) {
  CLI::App app{
      "uroce-pingpong: ibv_rc_pingpong over uroce. RC SENDs of -s bytes bounce -n times between two\n"
      "processes; the QP numbers, PSNs and GIDs are exchanged over TCP in rc_pingpong's format, so either\n"
      "end may be the real ibv_rc_pingpong. --uc plays ibv_uc_pingpong (UC SENDs, the same exchange), --ud\n"
      "plays ibv_ud_pingpong (UD SENDs, qkey 0x11111111) and --srq plays ibv_srq_pingpong (-q RC QPs\n"
      "sharing one receive queue), each with its own exchange.\n"
      "  server: uroce-pingpong --dev DEV --ip ADDR [options]\n"
      "  client: uroce-pingpong --dev DEV --ip ADDR [options] SERVER   (SERVER: host of the TCP exchange)\n"
      "  or, instead of --dev and --ip, --daemon SOCKET: the port of uroced at SOCKET (RC only)"};
  app.set_version_flag("--version", "uroce-pingpong " UROCE_VERSION);
  bool uc = false, ud = false, srq = false;
  app.add_flag("--uc", uc,
               "be ibv_uc_pingpong: one UC QP (no ACKs, nothing resent: a lost message stops the run at --timeout)");
  app.add_flag("--ud", ud,
               "be ibv_ud_pingpong: one UD QP, qkey 0x11111111, receives with a 40-byte GRH before the payload; "
               "-s (default 2048) must not exceed the port's active MTU (-m)")
      ->excludes("--uc");
  app.add_flag("--srq", srq,
               "be ibv_srq_pingpong: -q RC QPs on one shared receive queue of -r receives; -n counts over all QPs")
      ->excludes("--ud")
      ->excludes("--uc");
  app.add_option("-q,--num-qp", o.num_qp, "--srq: number of QPs to use (default 16)")
      ->check(CLI::Range(1u, uint32_t(exchange::kSrqPingpongRecords)));
  app.add_option("server", o.server, "server host for the TCP exchange (client mode)");
  app.add_option("-p,--port", o.tcp_port, "listen on/connect to TCP port (default 18515)");
  app.add_option("-d,--ib-dev", o.ib_dev, "name of the uroce device (default uroce0)");
  app.add_option("-i,--ib-port", o.ib_port, "port of the device (default 1; uroce devices have one)")
      ->check(CLI::Range(1, 1));
  app.add_option("-s,--size", o.size, "size of message to exchange (default 4096; --ud: 2048)")
      ->check(CLI::Range(uint32_t(1), uint32_t(1) << 31));
  app.add_option("-m,--mtu", o.mtu, "path MTU (default 1024; --ud: the port's active MTU)")->check(CLI::IsMember({256, 512, 1024, 2048, 4096}));
  app.add_option("-r,--rx-depth", o.rx_depth, "number of receives to post at a time (default 500)")
      ->check(CLI::Range(2, 16384));
  app.add_option("-n,--iters", o.iters, "number of exchanges (default 1000; --srq: over all QPs)")->check(CLI::Range(1u, 1000000000u));
  app.add_option("-l,--sl", o.sl, "service level: with --vlan or --pcp, the frames' 802.1p priority (a NIC's RoCE mapping)")->check(CLI::Range(0, 15));
  app.add_flag("-e,--events", o.events, "sleep on CQ events (the engine runs on a thread of its own meanwhile)");
  app.add_option("-g,--gid-idx", o.gid_idx, "local GID index (default 1: the --ip address; 0 is the link-local address)")->check(CLI::Range(0, 255));
  app.add_flag("-c,--chk", o.chk,
               "validate received buffers: every message carries a pattern of its iteration, the server checks "
               "each one and echoes it, the client checks the echo; exit 1 on a mismatch (the pattern is uroce's: with "
               "a real ibv_rc_pingpong client, leave -c off the server)");
  RdmaCoreFlags f;
  app.add_flag("-o,--odp", f.odp, "on-demand paging: ignored (uroce registers all memory up front)");
  app.add_flag("-O,--iodp", f.iodp, "implicit on-demand paging: ignored (uroce registers all memory up front)");
  app.add_flag("-P,--prefetch", f.prefetch, "prefetch an ODP MR: ignored (needs -o or -O, as in ibv_rc_pingpong)");
  app.add_flag("-t,--ts", f.ts, "completion timestamps: not supported (refused)");
  app.add_flag("-j,--dm", f.dm, "device memory: ignored (the buffer stays in host memory)");
  app.add_flag("-N,--new_send", f.new_send, "new post send WR API: ignored (uroce has one way to post a send)");
  auto* dev_opt =
      app.add_option("--dev", o.dev, "port: a PCI address or a DPDK vdev string, e.g. net_af_packet0,iface=eth1");
  auto* ip_opt = app.add_option("--ip", o.ip, "this endpoint's IPv4 or IPv6 address (its GID)");
  auto* vlan_opt = app.add_option("--vlan", o.vlan, "802.1Q: the port's frames carry this VLAN id (default untagged)")
                       ->check(CLI::Range(0, 4094));
  auto* pcp_opt = app.add_option("--pcp", o.pcp, "802.1Q: and this priority (alone: VLAN id 0); -l overrides it")
                      ->check(CLI::Range(0, 7));
  app.add_option("--daemon", o.daemon,
                 "uroced's socket: use the daemon's port (no --dev, --ip, --mac, --vlan, --pcp, --eal, --pcap)")
      ->excludes(dev_opt)
      ->excludes(ip_opt)
      ->excludes(vlan_opt)
      ->excludes(pcp_opt);
  app.add_flag("--cm", o.cm,
               "connect through the CM on the wire, as rdma_cm programs do (RC only): the server listens on -p in "
               "rdma_cm's TCP port space, the client connects to SERVER, its RoCE address; no TCP exchange, and "
               "the path MTU is what the CM settles (-m does not apply)");
  app.add_option("--mac", o.mac, "this endpoint's MAC address (default: the port's)");
  app.add_option("--eal", o.eal, "extra DPDK EAL arguments, quoted");
  app.add_option("--pcap", o.pcap, "write every frame sent and received to this pcap");
  double timeout_s = 10, accept_timeout_s = 0;
  app.add_option("--timeout", timeout_s,
                 "seconds the client keeps trying to reach the server, and either side waits for each exchange "
                 "step, for ARP/ND, and for any completion during the run (default 10)")
      ->check(CLI::Range(0.001, 86400.0));
  app.add_option("--accept-timeout", accept_timeout_s,
                 "server: seconds to wait for a client (default 0: forever, as ibv_rc_pingpong)")
      ->check(CLI::Range(0.0, 86400.0));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  o.mode = uc ? Mode::uc : ud ? Mode::ud : srq ? Mode::srq : Mode::rc;
  if (o.mode == Mode::ud && app.count("--size") == 0) o.size = 2048;  // ud_pingpong's default
  if (o.mode != Mode::srq && app.count("--num-qp")) {
    std::fprintf(stderr, "uroce-pingpong: -q/--num-qp needs --srq (ibv_srq_pingpong's option)\n");
    return 2;
  }
  if (o.mode == Mode::srq && o.num_qp > o.rx_depth) {
    // srq_pingpong's own check and words.
    std::fprintf(stderr, "uroce-pingpong: rx_depth %u is too small for %u QPs -- must have at least one receive per QP.\n",
                 o.rx_depth, o.num_qp);
    return 2;
  }
  if (o.cm && (o.mode != Mode::rc || !o.daemon.empty())) {
    std::fprintf(stderr, "uroce-pingpong: --cm connects RC QPs on a port of this process (no --ud, --uc, --srq, --daemon)\n");
    return 2;
  }
  if (o.cm && app.count("--mtu")) {
    std::fprintf(stderr, "uroce-pingpong: --cm: the CM settles the path MTU (the ports'), -m does not apply\n");
    return 2;
  }
  if (int rc = check_rdma_core_flags(o, f); rc >= 0) return rc;
  if (int rc = check_daemon(o); rc >= 0) return rc;
  if (o.daemon.empty())
    if (int rc = check_addresses(o); rc >= 0) return rc;
  o.mtu_enum = to_enum(o.mtu);
  o.timeout_ms = uint32_t(std::lround(timeout_s * 1000));
  o.accept_timeout_ms = uint32_t(std::ceil(accept_timeout_s * 1000));
  if (o.ib_dev.empty()) o.ib_dev = "uroce0";
  return -1;
}

}  // namespace uroce::pingpong
