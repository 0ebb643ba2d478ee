// SPDX-License-Identifier: BSD-3-Clause
#include "loopback.h"

#include "uroce/port/endpoint.h"

namespace uroce::perf {

bool Loopback::open(uint16_t mtu, const std::string& pcap_path, const cc::CcConfig& cc_config,
                    uint32_t idle_sleep_us, std::string& error) {
  if (!open_ring_pair("uroce_lb", mtu, port_a, port_b, error)) return false;
  PacketPort* a = port_a.get();
  PacketPort* b = port_b.get();
  if (!pcap_path.empty()) {
    pcap = capture::PcapWriter::create(pcap_path, error);
    if (!pcap) return false;
    // One end of the link sees every frame once: what it sends and what
    // it receives.
    cap_a = std::make_unique<capture::CapturingPort>(*port_a, *pcap, clock);
    a = cap_a.get();
  }
  // Linux's table of a RoCEv2 port with both families: GID 0 link-local,
  // GID 1 IPv4 (perftest's choice without -x), GID 2 IPv6 (--ipv6 or -x 2).
  wire::IpAddr ip_s, ip_c, ip6_s, ip6_c;
  wire::IpAddr::parse("192.168.77.1", ip_s);
  wire::IpAddr::parse("192.168.77.2", ip_c);
  wire::IpAddr::parse("fd00:77::1", ip6_s);
  wire::IpAddr::parse("fd00:77::2", ip6_c);
  DeviceConfig cs;
  cs.name = "uroce_lb0";
  cs.port = b;
  cs.clock = &clock;
  cs.gids = roce_gid_table(b->mac(), ip_s);
  cs.gids.push_back(ip6_s);
  cs.cc = cc_config;
  cs.idle_sleep_max_us = idle_sleep_us;
  DeviceConfig cc = cs;
  cc.name = "uroce_lb1";
  cc.port = a;
  cc.gids = roce_gid_table(a->mac(), ip_c);
  cc.gids.push_back(ip6_c);
  server = Device::open(cs, error);
  if (!server) return false;
  client = Device::open(cc, error);
  if (!client) return false;
  server->add_neighbor(ip_c, port_a->mac());
  client->add_neighbor(ip_s, port_b->mac());
  server->add_neighbor(ip6_c, port_a->mac());
  client->add_neighbor(ip6_s, port_b->mac());
  // The link-local GIDs (-x 0), which Linux would find by neighbour discovery.
  server->add_neighbor(cc.gids[0], port_a->mac());
  client->add_neighbor(cs.gids[0], port_b->mac());
  return true;
}

Loopback::~Loopback() {
  client.reset();
  server.reset();
  if (pcap) {
    std::string err;
    pcap->flush(err);
  }
}

}  // namespace uroce::perf
