// SPDX-License-Identifier: BSD-3-Clause
// One end of a RoCE link on a real DPDK port: what an application needs
// before its first QP talks to a peer. Endpoint starts the EAL, opens the
// port (PCI address or vdev string), optionally captures it to a pcap
// file, opens a Device whose GID 1 is the endpoint's address (Linux's table), and
// connects RC QPs to a peer given the peer's QPN, PSN and GID, resolving
// the peer's MAC by ARP (IPv4) or neighbour discovery (IPv6) on the way.
//
// How the QPN, PSN, GID, rkey and address reach the other side is the
// application's choice (a TCP socket, a file, a command line); see
// apps/examples/example_write.cpp and docs/install.md.
#pragma once

#include <infiniband/verbs.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "uroce/api.h"
#include "uroce/port/dpdk_port.h"
#include "uroce/port/packet_port.h"
#include "uroce/verbs/device.h"
#include "uroce/verbs/queue_pair.h"
#include "uroce/wire/ip_addr.h"

namespace uroce {

namespace capture {
class CapturingPort;
class PcapWriter;
}  // namespace capture
class TscClock;

struct EndpointConfig {
  // PCI address ("0000:3b:00.0") or vdev string ("net_af_packet0,iface=eth1",
  // "net_memif0,role=server,..."); unused by Endpoint::adopt.
  std::string dev{};
  // This endpoint's IPv4 or IPv6 address: GID kAddressGidIndex of the device.
  // Further addresses may follow, separated by commas ("10.0.0.1,fd00::1"):
  // GIDs 2, 3, ... in that order; the engine answers ARP/ND and accepts
  // RoCE traffic for each of them.
  std::string ip{};
  // Overrides the port's MAC ("02:00:00:00:00:01"); empty keeps it.
  std::string mac{};
  // Extra EAL arguments (EalConfig::args); they win over the defaults.
  std::vector<std::string> eal_args{};
  // Every frame the port sends and receives goes to this pcap file.
  std::string pcap{};
  // Ethernet MTU asked of the port (clamped to what the PMD supports).
  uint16_t mtu = 1500;
  // Where the application's own exchange (TCP through the kernel) connects
  // to: the server's address on a client, empty on a server. An af_xdp
  // port takes every frame of its queue from the kernel, so open() refuses
  // an af_xdp port on the interface that this address, or the network of
  // `ip`, is routed through (docs/ports.md).
  std::string exchange_peer{};
  // DpdkPortConfig::rx_interrupts: an engine thread that is idle sleeps
  // until a frame arrives, where the port has a receive interrupt.
  bool rx_interrupts = false;
  // Name, transport tuning, congestion control. port, clock and gids are
  // filled in by the endpoint.
  DeviceConfig device{};
};

// An endpoint's GID table has Linux's shape for a RoCEv2 device: GID 0 is
// the link-local IPv6 address derived from the MAC (EUI-64), GID 1 the
// endpoint's address (IPv4-mapped or IPv6). GID indices in perftest and
// rdma-core command lines (-x 1, -g 1 on rxe) then mean the same here.
inline constexpr uint8_t kLinkLocalGidIndex = 0;
inline constexpr uint8_t kAddressGidIndex = 1;
UROCE_API std::vector<wire::IpAddr> roce_gid_table(const wire::MacAddr& mac, const wire::IpAddr& address);

// What the peer tells about one of its RC QPs, through the application's
// own out-of-band exchange.
struct RcPeer {
  uint32_t qpn = 0;
  uint32_t psn = 0;  // the peer's first send PSN: this QP's expected receive PSN
  wire::IpAddr gid{};
};

// The attributes of INIT, RTR and RTS for connect_rc, with defaults that
// suit a RoCE link (rdma-core's examples and perftest choose the same).
struct RcConnectOptions {
  uint32_t sq_psn = 0;  // this QP's first send PSN: what this side told the peer
  ibv_mtu path_mtu = IBV_MTU_1024;
  // INIT's access flags, for a QP still in RESET.
  unsigned access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
                    IBV_ACCESS_REMOTE_ATOMIC;
  uint8_t port_num = 1;
  uint8_t sgid_index = kAddressGidIndex;  // the local GID the packets come from
  uint8_t hop_limit = 64;
  uint8_t traffic_class = 0;
  uint8_t sl = 0;
  uint8_t min_rnr_timer = 12;       // 0.64 ms
  uint8_t timeout = 14;             // 4.096 us * 2^14: 67 ms
  uint8_t retry_cnt = 7;
  uint8_t rnr_retry = 7;            // 7: retry forever
  uint8_t max_rd_atomic = 16;       // READs and atomics this side may have outstanding
  uint8_t max_dest_rd_atomic = 16;  // ... that the peer may have outstanding here
};

// The address vector of a RoCEv2 path to `dgid` (ibv_ah_attr: global,
// with the GRH's destination GID, source GID index, hop limit, traffic
// class; no LID). For an RC QP's RTR or a UD address handle.
UROCE_API ibv_ah_attr roce_address(const wire::IpAddr& dgid, const RcConnectOptions& options = {});

// One try at RESET or INIT -> INIT -> RTR -> RTS towards `peer` (a QP
// already in INIT keeps its access flags). A UC QP is connected the same
// way, with UC's attributes only (no timeout, retries, RNR timer or
// READ/atomic credits). 0, or the errno of the step
// that failed, with `error` naming the step ("modify QP to RTR: ...").
// EHOSTUNREACH at RTR: the peer's MAC is not known yet and the device has
// started resolving it; poll the device and call again (or use
// Endpoint::connect_rc, which does).
UROCE_API int connect_rc(QueuePair& qp, const RcPeer& peer, const RcConnectOptions& options, std::string& error);

class UROCE_API Endpoint {
 public:
  // Starts the EAL unless it runs already (once per process, EalConfig
  // defaults plus config.eal_args; a PCI address in config.dev is allowed
  // to probe), opens config.dev, and opens the device. nullptr and a
  // message naming the field or device at fault on failure.
  static std::unique_ptr<Endpoint> open(const EndpointConfig& config, std::string& error);
  // The same on a port the caller opened (one end of open_ring_pair, say):
  // the EAL runs already and config.dev is unused.
  static std::unique_ptr<Endpoint> adopt(std::unique_ptr<DpdkPort> port, const EndpointConfig& config,
                                         std::string& error);
  // Closes the device, then the capture (written out), then the port.
  ~Endpoint();
  Endpoint(const Endpoint&) = delete;
  Endpoint& operator=(const Endpoint&) = delete;

  Device& device() { return *device_; }
  DpdkPort& dpdk_port() { return *port_; }
  // What the device sends through: the capture in front of the port when
  // there is one, else the port.
  PacketPort& packet_port();
  // This endpoint's address: GID kAddressGidIndex.
  const wire::IpAddr& gid() const;
  // Runs the device's engine once (Device::poll).
  int poll() { return device_->poll(); }

  // ARP (IPv4) or neighbour solicitation (IPv6) for `peer`, polling the
  // device (and calling `idle`, if given, each round) until the peer
  // answers or `timeout` passes. `idle` is for a peer that needs polling by
  // the same thread, as two endpoints of one process do.
  bool resolve(const wire::IpAddr& peer, std::chrono::milliseconds timeout, std::string& error,
               const std::function<void()>& idle = {});

  // connect_rc on a QP of this endpoint's device, retried while the peer's
  // MAC resolves (RTR's EHOSTUNREACH), polling the device and calling
  // `idle` between tries, until `timeout`. 0 or an errno, with a message.
  int connect_rc(QueuePair& qp, const RcPeer& peer, const RcConnectOptions& options,
                 std::chrono::milliseconds timeout, std::string& error, const std::function<void()>& idle = {});

  // Writes out what the capture holds so far; true without a capture.
  bool flush_capture(std::string& error);

 private:
  Endpoint();
  bool start(const EndpointConfig& config, const std::vector<wire::IpAddr>& ips, std::string& error);

  std::unique_ptr<TscClock> clock_;
  std::unique_ptr<DpdkPort> port_;
  std::unique_ptr<capture::PcapWriter> pcap_;
  std::unique_ptr<capture::CapturingPort> capture_;
  std::unique_ptr<Device> device_;
};

}  // namespace uroce
