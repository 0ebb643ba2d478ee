// SPDX-License-Identifier: BSD-3-Clause
// Endpoint: EAL, port, capture and device in one object, and the RC
// connection steps on top of them.
#include "uroce/port/endpoint.h"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "endpoint/exchange_route.h"
#include "uroce/capture/capturing_port.h"
#include "uroce/capture/pcap_file.h"
#include "uroce/port/eal.h"
#include "uroce/port/tsc_clock.h"

namespace uroce {
namespace {

std::string errno_text(const std::string& what, int err) { return what + ": " + std::strerror(err); }

// A PCI address ("0000:3b:00.0" or "3b:00.0") names a device EAL must be
// allowed to probe; anything else is a vdev string.
bool is_pci(const std::string& dev) {
  const size_t colon = dev.find(':');
  return colon != std::string::npos && dev.find('.') != std::string::npos && dev.find(',') == std::string::npos &&
         dev.rfind("net_", 0) != 0;
}

// "ADDR[,ADDR...]": the endpoint's RoCE addresses, GID 1 first.
bool parse_ips(const std::string& text, std::vector<wire::IpAddr>& ips, std::string& error) {
  ips.clear();
  size_t start = 0;
  for (;;) {
    const size_t comma = text.find(',', start);
    const std::string one = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    wire::IpAddr ip;
    if (one.empty() || !wire::IpAddr::parse(one, ip)) {
      error = "ip '" + one + "' is not an IPv4 or IPv6 address (the endpoint's RoCE address)";
      return false;
    }
    if (std::find(ips.begin(), ips.end(), ip) != ips.end()) return error = "ip '" + one + "' is given twice", false;
    ips.push_back(ip);
    if (comma == std::string::npos) return true;
    start = comma + 1;
  }
}

bool parse_port_config(const EndpointConfig& c, DpdkPortConfig& pc, std::string& error) {
  pc.dev = c.dev;
  pc.mtu = c.mtu;
  pc.rx_interrupts = c.rx_interrupts;
  if (c.mac.empty()) return true;
  wire::MacAddr mac;
  if (!wire::MacAddr::parse(c.mac, mac)) return error = "mac '" + c.mac + "' is not a MAC address", false;
  pc.mac = mac;
  return true;
}

int to_init(QueuePair& qp, const RcConnectOptions& o, std::string& error) {
  if (qp.state() != IBV_QPS_RESET) return 0;
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_INIT;
  a.pkey_index = 0;
  a.port_num = o.port_num;
  a.qp_access_flags = o.access;
  const int err = qp.modify(a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
  if (err) error = errno_text("modify QP to INIT", err);
  return err;
}

int to_rtr(QueuePair& qp, const RcPeer& peer, const RcConnectOptions& o, std::string& error) {
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_RTR;
  a.path_mtu = o.path_mtu;
  a.dest_qp_num = peer.qpn;
  a.rq_psn = peer.psn;
  a.max_dest_rd_atomic = o.max_dest_rd_atomic;
  a.min_rnr_timer = o.min_rnr_timer;
  a.ah_attr = roce_address(peer.gid, o);
  int mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
  if (qp.qp_type() == IBV_QPT_RC) mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;  // not UC's
  const int err = qp.modify(a, mask);
  if (err) error = errno_text("modify QP to RTR", err);
  return err;
}

int to_rts(QueuePair& qp, const RcConnectOptions& o, std::string& error) {
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_RTS;
  a.sq_psn = o.sq_psn;
  a.timeout = o.timeout;
  a.retry_cnt = o.retry_cnt;
  a.rnr_retry = o.rnr_retry;
  a.max_rd_atomic = o.max_rd_atomic;
  int mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
  if (qp.qp_type() == IBV_QPT_RC)  // UC has no ACKs to time out, retry or wait for
    mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
  const int err = qp.modify(a, mask);
  if (err) error = errno_text("modify QP to RTS", err);
  return err;
}

std::string no_answer(const wire::IpAddr& peer, const std::string& port, std::chrono::milliseconds timeout) {
  return std::string(peer.is_v4_mapped() ? "no ARP reply" : "no neighbour advertisement") + " from " +
         peer.to_string() + " on " + port + " within " + std::to_string(timeout.count()) +
         " ms (is the peer running, on this link, with that address?)";
}

}  // namespace

ibv_ah_attr roce_address(const wire::IpAddr& dgid, const RcConnectOptions& o) {
  ibv_ah_attr ah{};
  ah.is_global = 1;
  ah.sl = o.sl;
  ah.port_num = o.port_num;
  ah.grh.hop_limit = o.hop_limit;
  ah.grh.traffic_class = o.traffic_class;
  ah.grh.sgid_index = o.sgid_index;
  std::memcpy(ah.grh.dgid.raw, dgid.bytes.data(), sizeof ah.grh.dgid.raw);
  return ah;
}

int connect_rc(QueuePair& qp, const RcPeer& peer, const RcConnectOptions& o, std::string& error) {
  if (int err = to_init(qp, o, error)) return err;
  if (qp.state() == IBV_QPS_INIT)
    if (int err = to_rtr(qp, peer, o, error)) return err;
  return to_rts(qp, o, error);
}

Endpoint::Endpoint() = default;

Endpoint::~Endpoint() {
  // The device first: its frames come from the port's pool.
  device_.reset();
  capture_.reset();
  if (pcap_) {
    std::string ignored;
    pcap_->flush(ignored);
  }
  port_.reset();
}

std::unique_ptr<Endpoint> Endpoint::open(const EndpointConfig& config, std::string& error) {
  if (config.dev.empty()) return error = "dev is required: a PCI address or a DPDK vdev string", nullptr;
  std::vector<wire::IpAddr> ips;
  DpdkPortConfig pc;
  if (!parse_ips(config.ip, ips, error) || !parse_port_config(config, pc, error)) return nullptr;
  if (!endpoint::check_af_xdp_exchange(config.dev, config.ip.substr(0, config.ip.find(',')), config.exchange_peer,
                                       error))
    return nullptr;
  EalConfig eal;
  eal.args = config.eal_args;
  eal.quiet = true;
  if (is_pci(config.dev)) eal.pci.push_back(config.dev);
  if (!eal_init(eal, error)) return nullptr;
  std::unique_ptr<Endpoint> e(new Endpoint());
  e->port_ = DpdkPort::open(pc, error);
  if (!e->port_ || !e->start(config, ips, error)) return nullptr;
  return e;
}

std::unique_ptr<Endpoint> Endpoint::adopt(std::unique_ptr<DpdkPort> port, const EndpointConfig& config,
                                          std::string& error) {
  if (!port) return error = "Endpoint::adopt: no port", nullptr;
  std::vector<wire::IpAddr> ips;
  if (!parse_ips(config.ip, ips, error)) return nullptr;
  std::unique_ptr<Endpoint> e(new Endpoint());
  e->port_ = std::move(port);
  if (!e->start(config, ips, error)) return nullptr;
  return e;
}

// The EAL runs by now: a TscClock made before it would have no TSC
// frequency and read clock_gettime on every engine poll instead.
bool Endpoint::start(const EndpointConfig& config, const std::vector<wire::IpAddr>& ips, std::string& error) {
  clock_ = std::make_unique<TscClock>();
  PacketPort* p = port_.get();
  if (!config.pcap.empty()) {
    pcap_ = capture::PcapWriter::create(config.pcap, error);
    if (!pcap_) return false;
    capture_ = std::make_unique<capture::CapturingPort>(*port_, *pcap_, *clock_);
    p = capture_.get();
  }
  DeviceConfig dc = config.device;
  dc.port = p;
  dc.clock = clock_.get();
  dc.gids = roce_gid_table(p->mac(), ips.front());
  dc.gids.insert(dc.gids.end(), ips.begin() + 1, ips.end());
  device_ = Device::open(dc, error);
  return device_ != nullptr;
}

PacketPort& Endpoint::packet_port() {
  if (capture_) return *capture_;
  return *port_;
}

const wire::IpAddr& Endpoint::gid() const { return device_->gids()[kAddressGidIndex]; }

std::vector<wire::IpAddr> roce_gid_table(const wire::MacAddr& mac, const wire::IpAddr& address) {
  wire::IpAddr ll;
  ll.bytes[0] = 0xfe;
  ll.bytes[1] = 0x80;
  ll.bytes[8] = mac.bytes[0] ^ 0x02;  // EUI-64: the universal/local bit flipped
  ll.bytes[9] = mac.bytes[1];
  ll.bytes[10] = mac.bytes[2];
  ll.bytes[11] = 0xff;
  ll.bytes[12] = 0xfe;
  ll.bytes[13] = mac.bytes[3];
  ll.bytes[14] = mac.bytes[4];
  ll.bytes[15] = mac.bytes[5];
  return {ll, address};
}

bool Endpoint::resolve(const wire::IpAddr& peer, std::chrono::milliseconds timeout, std::string& error,
                       const std::function<void()>& idle) {
  const auto until = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    const NeighborState s = device_->resolve_neighbor(peer);
    if (s == NeighborState::reachable) return true;
    if (s == NeighborState::failed || std::chrono::steady_clock::now() >= until) break;
    device_->poll();
    if (idle) idle();
  }
  error = no_answer(peer, port_->name(), timeout);
  return false;
}

int Endpoint::connect_rc(QueuePair& qp, const RcPeer& peer, const RcConnectOptions& options,
                         std::chrono::milliseconds timeout, std::string& error, const std::function<void()>& idle) {
  const auto until = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    const int err = uroce::connect_rc(qp, peer, options, error);
    if (err != EHOSTUNREACH) return err;
    // The device gives up on a neighbour after DeviceConfig's
    // neighbor_timeout_ms; the next RTR starts a fresh resolution.
    if (std::chrono::steady_clock::now() >= until) {
      error = no_answer(peer.gid, port_->name(), timeout);
      return err;
    }
    device_->poll();
    if (idle) idle();
  }
}

bool Endpoint::flush_capture(std::string& error) { return !pcap_ || pcap_->flush(error); }

}  // namespace uroce
