// SPDX-License-Identifier: BSD-3-Clause
// Whether an af_xdp port would take the application's TCP exchange away
// from the kernel. The af_xdp PMD's XDP program redirects every frame of
// its queue to the socket, TCP and ARP included, so an exchange routed
// through the same interface never reaches the kernel's TCP stack.
#pragma once

#include <string>

namespace uroce::endpoint {

// The interface the kernel sends traffic for `host` (an address or a name)
// through: "lo" for one of this host's own addresses, "" without a route.
std::string route_iface(const std::string& host);

// The interface that holds `addr` as one of the kernel's own addresses, "".
std::string iface_owning(const std::string& addr);

// For an af_xdp vdev string: false with a message that names the fix when
// the exchange with `peer` (empty: this side waits for the peer) or the
// network of the endpoint's `ip` is routed through the port's interface.
// Other devices: true.
bool check_af_xdp_exchange(const std::string& dev, const std::string& ip, const std::string& peer,
                           std::string& error);

}  // namespace uroce::endpoint
