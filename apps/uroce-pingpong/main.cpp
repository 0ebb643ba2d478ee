// uroce-pingpong: rdma-core's ibv_rc_pingpong over uroce, with its flags,
// its TCP exchange (so either end can be the real tool) and its output.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <ctime>

#include "app_device.h"
#include "context.h"
#include "options.h"
#include "report.h"
#include "run.h"
#include "uroce/exchange/pingpong.h"
#include "uroce/exchange/tcp_channel.h"

using namespace uroce;
using namespace uroce::pingpong;

namespace {

using std::chrono::milliseconds;

int fail(const std::string& msg) {
  std::fprintf(stderr, "uroce-pingpong: %s\n", msg.c_str());
  return 1;
}

// What a SEND packet adds to the path MTU on the wire, as the engine
// counts it when it checks a QP's path MTU against the port (IPv6, UDP,
// BTH, the longest extension headers, ICRC).
constexpr uint32_t kPacketOverhead = 40 + 8 + 12 + 28 + 4;

// The peer's MAC by ARP/ND, then the QP to RTR and RTS.
bool connect_to(app::AppDevice& ad, Context& ctx, const Options& o, const exchange::PingpongDest& remote,
                uint32_t my_psn, std::string& error) {
  if (remote.gid != wire::IpAddr{} && !ad.resolve(remote.gid, milliseconds(o.timeout_ms), error)) return false;
  return ctx.connect(remote, my_psn, error);
}

int run(const Options& o) {
  const bool client = !o.server.empty();
  app::AppDevice ad;
  app::PortOptions po;
  po.dev = o.dev;
  po.ip = o.ip;
  po.mac = o.mac;
  po.eal = o.eal;
  po.pcap = o.pcap;
  po.mtu = o.mtu > 1024 ? 9000 : 1500;  // a jumbo link when the path MTU needs one; the port clamps
  po.name = o.ib_dev;
  std::string error;
  if (!ad.open(po, error)) return fail(error);
  if (ad.port->mtu() < o.mtu + kPacketOverhead)
    return fail("path MTU " + std::to_string(o.mtu) + " (-m) needs a port MTU of at least " +
                std::to_string(o.mtu + kPacketOverhead) + "; " + o.dev + " has " + std::to_string(ad.port->mtu()) +
                " (raise the interface MTU; af_packet also needs framesz=8192,blocksz=8192)");
  const auto& gids = ad.device->gids();
  if (size_t(o.gid_idx) >= gids.size())
    return fail("can't read sgid of index " + std::to_string(o.gid_idx) + ": " + o.ib_dev + " has " +
                std::to_string(gids.size()) + " GID(s), index 0 is the --ip address");

  auto ctx = Context::create(*ad.device, o, client, error);
  if (!ctx) return fail(error);
  const int routs = ctx->post_recv(int(o.rx_depth));
  if (routs < int(o.rx_depth)) return fail("couldn't post receive (" + std::to_string(routs) + ")");

  exchange::PingpongDest mine;
  mine.lid = 0;  // Ethernet: no LID
  mine.qpn = ctx->qp().qp_num();
  mine.psn = uint32_t(lrand48() & 0xffffff);
  mine.gid = gids[size_t(o.gid_idx)];
  print_address("local address: ", mine);

  // The engine keeps running while we wait on TCP: it answers the peer's
  // ARP and acknowledges its packets.
  const exchange::Idle idle = [&] { ad.poll(); };
  exchange::PingpongDest remote;
  if (client) {
    auto ch = exchange::TcpChannel::connect(o.server, o.tcp_port, milliseconds(o.timeout_ms), idle, error);
    if (!ch) return fail(error);
    ch->set_timeout(milliseconds(o.timeout_ms));
    if (!exchange::pingpong_client_exchange(*ch, mine, remote, error)) return fail(error);
  } else {
    auto ch = exchange::TcpChannel::accept(o.tcp_port, milliseconds(o.accept_timeout_ms),
                                           idle, error);
    if (!ch) return fail(error);
    ch->set_timeout(milliseconds(o.timeout_ms));
    const exchange::PingpongConnect connect = [&](const exchange::PingpongDest& r, std::string& e) {
      return connect_to(ad, *ctx, o, r, mine.psn, e);
    };
    if (!exchange::pingpong_server_exchange(*ch, mine, connect, remote, error)) return fail(error);
  }
  print_address("remote address:", remote);
  if (client && !connect_to(ad, *ctx, o, remote, mine.psn, error)) return fail(error);

  const RunResult r = run_pingpong(*ctx, [&] { return ad.device->poll(); }, o, client, routs);
  if (!r.error.empty()) return fail(r.error);
  print_result(o.size, o.iters, r.usec);
  if (r.mismatches)
    return fail("--chk: " + std::to_string(r.mismatches) + " of " + std::to_string(o.iters) +
                " received messages were wrong; first: " + r.first_mismatch);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (int rc = parse_options(argc, argv, o); rc >= 0) return rc;
  srand48(long(getpid()) * time(nullptr));
  const int rc = run(o);
  app::exit_now(rc);  // every port and device is gone by now
}
