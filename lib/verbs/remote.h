// SPDX-License-Identifier: BSD-3-Clause
// A Device that is a client of uroced (DeviceConfig::daemon_socket): the
// verbs objects hold the client library's objects (lib/client) and pass
// every call to them; no engine, no thread, no DPDK (docs/daemon.md).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "uroce/client/daemon_client.h"
#include "uroce/verbs/types.h"
#include "uroce/wire/eth.h"
#include "uroce/wire/ip_addr.h"

namespace uroce::detail {

struct RemoteDevice {
  std::unique_ptr<client::Connection> conn;
  std::string name;
  std::vector<wire::IpAddr> gids;
  wire::MacAddr mac{};
  uint16_t mtu = 0;
  DeviceLimits limits;
};

// Connects to the daemon; nullptr with a message.
std::unique_ptr<RemoteDevice> open_remote(const std::string& socket, std::string& error);

// The next asynchronous event, its objects the application's; 0, EAGAIN
// (none, or O_NONBLOCK when waiting), EINTR, ENODEV.
int remote_async_event(RemoteDevice& d, AsyncEvent& ev, bool wait);

}  // namespace uroce::detail
