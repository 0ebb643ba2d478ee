// SPDX-License-Identifier: BSD-3-Clause
// --daemon SOCKET: both ends of the test in this process, as two Devices
// opened on one uroced's socket (DeviceConfig::daemon_socket): two clients
// whose QPs the daemon's engine joins by its loopback. The loops are
// --loopback's; there is no engine here to poll, and no EAL.
#include "daemon_run.h"

#include <cstdio>
#include <cstring>
#include <string>

#include "bw.h"
#include "lat.h"
#include "perftest_glue.h"
#include "report.h"
#include "runner.h"
#include "uroce/verbs/device.h"

namespace uroce::perf {
namespace {

int fail(const std::string& message) {
  std::fprintf(stderr, "uroce-perf: %s\n", message.c_str());
  std::fflush(nullptr);
  return 1;
}

}  // namespace

int run_daemon(const Options& o) {
  std::string error;
  DeviceConfig dc;
  dc.daemon_socket = o.daemon;
  auto server_dev = Device::open(dc, error);
  if (!server_dev) return fail(error);
  auto client_dev = Device::open(dc, error);
  if (!client_dev) return fail(error);
  const uint32_t mtu = o.mtu ? o.mtu : 1024;
  const uint64_t bytes = buffer_bytes(o);
  auto server = Endpoint::create(*server_dev, o, bytes, 0x5E, error);
  if (!server) return fail("server: " + error);
  auto client = Endpoint::create(*client_dev, o, bytes, 0xC1, error);
  if (!client) return fail("client: " + error);
  for (size_t q = 0; q < o.num_qps; ++q) {
    if (int err = server->connect(q, client->info(q), o, mtu_enum(mtu)))
      return fail("connecting the server QP failed: " + std::string(strerror(err)));
    if (int err = client->connect(q, server->info(q), o, mtu_enum(mtu)))
      return fail("connecting the client QP failed: " + std::string(strerror(err)));
  }
  RunInfo run;
  run.device = o.ib_dev.empty() ? client_dev->name() + " (uroced at " + o.daemon + ")" : o.ib_dev;
  run.mtu = mtu;
  for (size_t q = 0; q < o.num_qps; ++q) {
    run.local.push_back(client->info(q));
    run.remote.push_back(server->info(q));
  }
  print_banner(o, run);
  // The daemon's engine runs on its own thread: nothing to poll here but
  // the CQs (or, with -e, the completion channels).
  const PollFn poll = o.use_event ? PollFn([&] { wait_events({client.get(), server.get()}, event_wait_ms(o)); })
                                  : PollFn([] {});
  std::vector<BwResult> bw;
  std::vector<LatResult> lat;
  std::string failure;
  o.kind == Kind::bw ? print_bw_header(o) : print_lat_header(o);
  for (uint64_t size : sizes(o)) {
    if (o.kind == Kind::bw) {
      BwResult rx;
      bw.push_back(run_bw(*client, *server, poll, o, size, &rx));
      print_bw_row(o, bw.back());
      failure = bw.back().error;
    } else {
      lat.push_back(run_lat(*client, *server, poll, o, size));
      print_lat_row(o, lat.back());
      failure = lat.back().error;
    }
    if (!failure.empty()) break;
  }
  print_footer(o);
  if (!write_json(o, run, bw, lat, nlohmann::json::object(), error)) return fail(error);
  std::printf(" uroce: through uroced at %s%s\n", o.daemon.c_str(),
              o.verify && failure.empty() ? "; data verified" : "");
  if (!failure.empty()) return fail(failure);
  std::fflush(nullptr);
  return 0;
}

}  // namespace uroce::perf
