// SPDX-License-Identifier: BSD-3-Clause
// uroce-pingpong: rdma-core's ibv_rc_pingpong (--ud: ibv_ud_pingpong,
// --srq: ibv_srq_pingpong) over uroce, with its flags, its TCP exchange
// (so either end can be the real tool) and its output.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <ctime>

#include "app_support.h"
#include "cm_session.h"
#include "options.h"
#include "session.h"

using namespace uroce;
using namespace uroce::pingpong;

namespace {

// What a SEND packet adds to the path MTU on the wire, as the engine
// counts it when it checks a QP's path MTU against the port (IPv6, UDP,
// BTH, the longest extension headers, ICRC).
constexpr uint32_t kPacketOverhead = 40 + 8 + 12 + 28 + 4;

// --daemon: the device is a client of uroced (no EAL here); its port,
// address and MTU are the daemon's. RC only (options.cpp refuses the rest).
int run_on_daemon(const Options& o, exchange::TcpListener* listener) {
  DeviceConfig dc;
  dc.daemon_socket = o.daemon;
  dc.name = o.ib_dev;
  std::string error;
  std::unique_ptr<Device> dev = Device::open(dc, error);
  if (!dev) return fail(error);
  if (dev->mtu() < o.mtu + kPacketOverhead)
    return fail("path MTU " + std::to_string(o.mtu) + " (-m) needs a port MTU of at least " +
                std::to_string(o.mtu + kPacketOverhead) + "; uroced's port has " + std::to_string(dev->mtu()));
  if (size_t(o.gid_idx) >= dev->gids().size())
    return fail("can't read sgid of index " + std::to_string(o.gid_idx) + ": uroced's device has " +
                std::to_string(dev->gids().size()) + " GID(s), index 1 is its address");
  Station st(*dev);
  return run_single_qp(st, listener, o);
}

int run(const Options& o) {
  if (o.mode == Mode::ud && o.size > o.mtu)
    // ud_pingpong's check (and its first words): a UD message is one packet.
    return fail("Requested size larger than port MTU (" + std::to_string(o.mtu) + "): -s " + std::to_string(o.size) +
                " does not fit one UD packet; use -s <= " + std::to_string(o.mtu) +
                ", or -m 2048/4096 on a jumbo link");
  // The server binds its TCP port first: a busy port fails before any
  // port work and before the local address line.
  std::unique_ptr<exchange::TcpListener> listener;
  std::string error;
  if (o.server.empty() && !o.cm && !(listener = exchange::TcpListener::listen(o.tcp_port, error))) return fail(error);
  if (!o.daemon.empty()) return run_on_daemon(o, listener.get());
  EndpointConfig ec;
  ec.dev = o.dev;
  ec.ip = o.ip;
  ec.mac = o.mac;
  uroce::set_vlan(ec.device, o.vlan, o.pcp);
  ec.eal_args = app::split_args(o.eal);
  ec.pcap = o.pcap;
  ec.mtu = o.mtu > 1024 ? 9000 : 1500;  // a jumbo link when the path MTU needs one; the port clamps
  ec.exchange_peer = o.server;
  ec.device.name = o.ib_dev;
  std::unique_ptr<uroce::Endpoint> ep = uroce::Endpoint::open(ec, error);
  if (!ep) return fail(error);
  const uint16_t port_mtu = ep->dpdk_port().mtu();
  if (port_mtu < o.mtu + kPacketOverhead)
    return fail("path MTU " + std::to_string(o.mtu) + " (-m) needs a port MTU of at least " +
                std::to_string(o.mtu + kPacketOverhead) + "; " + o.dev + " has " + std::to_string(port_mtu) +
                " (raise the interface MTU; af_packet sizes its ring slots from it)");
  const auto& gids = ep->device().gids();
  if (size_t(o.gid_idx) >= gids.size())
    return fail("can't read sgid of index " + std::to_string(o.gid_idx) + ": " + o.ib_dev + " has " +
                std::to_string(gids.size()) + " GID(s), index 0 is the --ip address");
  Station st(*ep);
  if (o.cm) return run_cm(st, o);
  return o.mode == Mode::srq ? run_srq(st, listener.get(), o) : run_single_qp(st, listener.get(), o);
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (int rc = parse_options(argc, argv, o); rc >= 0) return rc;
  srand48(long(getpid()) * time(nullptr));
  const int rc = run(o);
  app::exit_now(rc);  // every port and device is gone by now
}
