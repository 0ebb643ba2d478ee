#include "app_device.h"

#include <unistd.h>

#include <cstdio>
#include <sstream>
#include <vector>

#include "uroce/port/eal.h"

namespace uroce::app {
namespace {

std::vector<std::string> split(const std::string& s) {
  std::istringstream in(s);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

// A PCI address ("0000:3b:00.0" or "3b:00.0") names a device EAL must be
// allowed to probe; anything else is a vdev string.
bool is_pci(const std::string& dev) {
  const size_t colon = dev.find(':');
  return colon != std::string::npos && dev.find('.') != std::string::npos && dev.find(',') == std::string::npos &&
         dev.rfind("net_", 0) != 0;
}

}  // namespace

bool AppDevice::open(const PortOptions& o, std::string& error) {
  if (o.dev.empty()) return error = "--dev is required: a PCI address or a DPDK vdev string", false;
  wire::IpAddr ip;
  if (o.ip.empty() || !wire::IpAddr::parse(o.ip, ip))
    return error = "--ip: '" + o.ip + "' is not an IPv4 or IPv6 address (this endpoint's RoCE address)", false;
  DpdkPortConfig pc;
  pc.dev = o.dev;
  pc.mtu = o.mtu;
  if (!o.mac.empty()) {
    wire::MacAddr mac;
    if (!wire::MacAddr::parse(o.mac, mac)) return error = "--mac: '" + o.mac + "' is not a MAC address", false;
    pc.mac = mac;
  }
  EalConfig eal;
  eal.args = split(o.eal);
  eal.quiet = true;
  if (is_pci(o.dev)) eal.pci.push_back(o.dev);
  if (!eal_init(eal, error)) return false;
  clock.emplace();
  port = DpdkPort::open(pc, error);
  if (!port) return false;
  PacketPort* p = port.get();
  if (!o.pcap.empty()) {
    pcap = capture::PcapWriter::create(o.pcap, error);
    if (!pcap) return false;
    capture = std::make_unique<capture::CapturingPort>(*port, *pcap, *clock);
    p = capture.get();
  }
  DeviceConfig dc;
  dc.name = o.name;
  dc.port = p;
  dc.clock = &*clock;
  dc.gids = {ip};
  dc.cc = o.cc;
  device = Device::open(dc, error);
  return device != nullptr;
}

bool AppDevice::resolve(const wire::IpAddr& peer, std::chrono::milliseconds timeout, std::string& error) {
  const auto until = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    const NeighborState s = device->resolve_neighbor(peer);
    if (s == NeighborState::reachable) return true;
    if (s == NeighborState::failed || std::chrono::steady_clock::now() >= until) break;
    device->poll();
  }
  error = std::string(peer.is_v4_mapped() ? "no ARP reply" : "no neighbour advertisement") + " from " +
          peer.to_string() + " on " + port->name() + " within " + std::to_string(timeout.count()) +
          " ms (is the peer running, on this link, with that --ip?)";
  return false;
}

void AppDevice::flush_capture() {
  std::string err;
  if (pcap && !pcap->flush(err)) std::fprintf(stderr, "uroce: %s\n", err.c_str());
}

AppDevice::~AppDevice() {
  // The device first: its frames come from the port's pool.
  device.reset();
  capture.reset();
  if (pcap) {
    std::string err;
    pcap->flush(err);
  }
  port.reset();
}

void exit_now(int status) {
  std::fflush(nullptr);
  _exit(status);
}

}  // namespace uroce::app
