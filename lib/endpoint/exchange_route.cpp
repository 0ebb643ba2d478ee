// SPDX-License-Identifier: BSD-3-Clause
#include "endpoint/exchange_route.h"

#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>

namespace uroce::endpoint {
namespace {

bool resolve(const std::string& host, sockaddr_storage& out, socklen_t& len) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* res = nullptr;
  if (host.empty() || getaddrinfo(host.c_str(), "9", &hints, &res) != 0 || res == nullptr) return false;
  std::memcpy(&out, res->ai_addr, res->ai_addrlen);
  len = res->ai_addrlen;
  freeaddrinfo(res);
  return true;
}

bool same_ip(const sockaddr* a, const sockaddr* b) {
  if (a == nullptr || b == nullptr || a->sa_family != b->sa_family) return false;
  if (a->sa_family == AF_INET)
    return reinterpret_cast<const sockaddr_in*>(a)->sin_addr.s_addr ==
           reinterpret_cast<const sockaddr_in*>(b)->sin_addr.s_addr;
  if (a->sa_family == AF_INET6)
    return std::memcmp(&reinterpret_cast<const sockaddr_in6*>(a)->sin6_addr,
                       &reinterpret_cast<const sockaddr_in6*>(b)->sin6_addr, sizeof(in6_addr)) == 0;
  return false;
}

std::string iface_with(const sockaddr* addr) {
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return "";
  std::string name;
  for (ifaddrs* i = list; i && name.empty(); i = i->ifa_next)
    if (same_ip(i->ifa_addr, addr)) name = i->ifa_name;
  freeifaddrs(list);
  return name;
}

std::string devarg(const std::string& dev, const std::string& key) {
  for (size_t pos = 0; (pos = dev.find(key + "=", pos)) != std::string::npos; pos += key.size()) {
    if (pos == 0 || dev[pos - 1] != ',') continue;
    const size_t from = pos + key.size() + 1;
    return dev.substr(from, dev.find(',', from) - from);
  }
  return "";
}

}  // namespace

std::string route_iface(const std::string& host) {
  sockaddr_storage dst{};
  socklen_t len = 0;
  if (!resolve(host, dst, len)) return "";
  // A connected UDP socket sends nothing; the kernel picks the route and
  // with it the source address, which names the interface.
  const int s = socket(dst.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (s < 0) return "";
  sockaddr_storage src{};
  socklen_t src_len = sizeof src;
  const bool routed = connect(s, reinterpret_cast<sockaddr*>(&dst), len) == 0 &&
                      getsockname(s, reinterpret_cast<sockaddr*>(&src), &src_len) == 0;
  close(s);
  if (!routed) return "";
  if (same_ip(reinterpret_cast<sockaddr*>(&src), reinterpret_cast<sockaddr*>(&dst))) return "lo";
  return iface_with(reinterpret_cast<sockaddr*>(&src));
}

std::string iface_owning(const std::string& addr) {
  sockaddr_storage a{};
  socklen_t len = 0;
  return resolve(addr, a, len) ? iface_with(reinterpret_cast<sockaddr*>(&a)) : "";
}

bool check_af_xdp_exchange(const std::string& dev, const std::string& ip, const std::string& peer,
                           std::string& error) {
  if (dev.rfind("net_af_xdp", 0) != 0 && dev.rfind("eth_af_xdp", 0) != 0) return true;
  const std::string iface = devarg(dev, "iface");
  if (iface.empty()) return true;  // the PMD refuses it with its own message
  std::string queue = devarg(dev, "start_queue");
  if (queue.empty()) queue = "0";
  std::string what;
  if (!peer.empty() && route_iface(peer) == iface) {
    what = "the TCP exchange with " + peer + " would be lost (the kernel routes " + peer + " through " + iface + ")";
  } else if (iface_owning(ip) == iface) {
    what = "traffic for the kernel's own address " + ip + " on " + iface + ", a TCP exchange included, would be lost";
  } else if (route_iface(ip) == iface) {
    what = "a TCP exchange with peers on the network of " + ip + " would be lost (the kernel routes it through " +
           iface + ")";
  } else {
    return true;
  }
  const std::string name = dev.substr(0, dev.find(','));
  error = "port " + dev + ": af_xdp takes every frame of " + iface + " queue " + queue +
          " from the kernel (TCP and ARP included), so " + what +
          ": run the exchange over a second link (the server's address on another interface), or use " +
          "net_af_packet" + name.substr(name.find("af_xdp") + 6) + ",iface=" + iface + " (docs/ports.md)";
  return false;
}

}  // namespace uroce::endpoint
