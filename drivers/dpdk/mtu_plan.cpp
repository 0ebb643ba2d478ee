// SPDX-License-Identifier: BSD-3-Clause
#include "mtu_plan.h"

#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include <algorithm>
#include <cstring>

namespace uroce::dpdk {
namespace {

// Ethernet header + one VLAN tag + FCS room: the largest frame for an MTU.
constexpr uint32_t kFrameOverhead = 14 + 4 + 4;
// af_xdp (22.11, umem = our mempool): RX needs this much room beyond the
// frame, and a mempool element must fit in a 4 KB page.
constexpr uint32_t kAfXdpSlack = 384;
constexpr uint32_t kAfXdpMaxRoom = 3800;
// af_packet: the kernel puts a received frame this far into its ring slot.
constexpr uint32_t kAfPacketRxOffset = 80;
// af_packet: the PMD writes a transmitted frame this far into its slot
// (TPACKET2_HDRLEN - sizeof(sockaddr_ll)).
constexpr uint32_t kAfPacketTxOffset = 32;
// af_packet: the PMD's ring slot (framesz) when none is given.
constexpr uint32_t kAfPacketDefaultSlot = 2048;
// af_packet: the bytes of one ring (RX or TX) when the string names no
// framecnt. The PMD's default of 512 slots cannot hold one 1 MiB READ
// response (1024 frames) that arrives while the engine is off the CPU, and
// the requester's retries then meet the same overflow; 8 MiB holds 4096
// standard frames.
constexpr uint32_t kAfPacketRingBytes = 8u << 20;
constexpr uint32_t kAfPacketMinFrames = 512;
constexpr uint32_t kAfPacketMaxFrames = 4096;

uint32_t devarg_u32(const std::string& devargs, const std::string& key, uint32_t dflt) {
  size_t pos = 0;
  while ((pos = devargs.find(key + "=", pos)) != std::string::npos) {
    if (pos == 0 || devargs[pos - 1] == ',') return uint32_t(std::strtoul(devargs.c_str() + pos + key.size() + 1, nullptr, 0));
    pos += key.size();
  }
  return dflt;
}

bool has_devarg(const std::string& devargs, const std::string& key) {
  for (size_t pos = 0; (pos = devargs.find(key + "=", pos)) != std::string::npos; pos += key.size())
    if (pos > 0 && devargs[pos - 1] == ',') return true;
  return false;
}

std::string devarg_str(const std::string& devargs, const std::string& key) {
  for (size_t pos = 0; (pos = devargs.find(key + "=", pos)) != std::string::npos; pos += key.size()) {
    if (pos == 0 || devargs[pos - 1] != ',') continue;
    const size_t from = pos + key.size() + 1;
    return devargs.substr(from, devargs.find(',', from) - from);
  }
  return "";
}

uint32_t if_mtu_by_name(const char* name) {
  const int s = ::socket(AF_INET, SOCK_DGRAM, 0);
  if (s < 0) return 0;
  ifreq ifr{};
  std::memcpy(ifr.ifr_name, name, std::min<size_t>(std::strlen(name), IFNAMSIZ - 1));
  const int rc = ::ioctl(s, SIOCGIFMTU, &ifr);
  ::close(s);
  return rc == 0 ? uint32_t(ifr.ifr_mtu) : 0;
}

// The MTU of the host interface behind a port (af_packet), 0 if unknown.
uint32_t host_if_mtu(unsigned if_index) {
  char name[IF_NAMESIZE] = {};
  if (if_index == 0 || if_indextoname(if_index, name) == nullptr) return 0;
  return if_mtu_by_name(name);
}

uint32_t round_up(uint32_t v, uint32_t a) { return (v + a - 1) / a * a; }

}  // namespace

std::string af_packet_slots_for_mtu(const std::string& dev, uint16_t mtu, std::string& notice) {
  if (dev.rfind("net_af_packet", 0) != 0 && dev.rfind("eth_af_packet", 0) != 0) return dev;
  if (has_devarg(dev, "framesz") || has_devarg(dev, "blocksz")) return dev;
  const std::string iface = devarg_str(dev, "iface");
  const uint32_t if_mtu = iface.empty() ? 0 : if_mtu_by_name(iface.c_str());
  const uint32_t carried = if_mtu && if_mtu < mtu ? if_mtu : mtu;
  // The kernel writes a received frame kAfPacketRxOffset into its slot.
  const uint32_t need = carried + kFrameOverhead + kAfPacketRxOffset;
  std::string out = dev;
  uint32_t slot = kAfPacketDefaultSlot;
  if (need > kAfPacketDefaultSlot) {
    // Blocks are whole pages, and the PMD addresses slot i at i * framesz,
    // which holds only when a block is a whole number of slots: one slot
    // per block of whole pages.
    slot = round_up(need, uint32_t(::sysconf(_SC_PAGESIZE)));
    const std::string added = "framesz=" + std::to_string(slot) + ",blocksz=" + std::to_string(slot);
    notice = "MTU " + std::to_string(carried) + " needs af_packet ring slots of " + std::to_string(slot) +
             " bytes (default 2048): added " + added;
    out += "," + added;
  }
  if (!has_devarg(dev, "framecnt")) {
    const uint32_t frames = std::clamp(kAfPacketRingBytes / slot, kAfPacketMinFrames, kAfPacketMaxFrames);
    out += ",framecnt=" + std::to_string(frames);
  }
  return out;
}

uint16_t ethdev_max_mtu(const rte_eth_dev_info& info) {
  const uint32_t overhead = (info.max_mtu != UINT16_MAX && info.max_rx_pktlen > info.max_mtu)
                                ? info.max_rx_pktlen - info.max_mtu
                                : RTE_ETHER_HDR_LEN + RTE_ETHER_CRC_LEN;
  const uint32_t by_len = info.max_rx_pktlen > overhead ? info.max_rx_pktlen - overhead : 0;
  return uint16_t(std::min<uint32_t>({info.max_mtu, by_len, UINT16_MAX}));
}

bool plan_mtu(const rte_eth_dev_info& info, const std::string& devargs, uint16_t requested,
              const std::string& label, MtuPlan& plan, std::string& error) {
  const std::string driver = info.driver_name ? info.driver_name : "";
  const uint32_t ethdev_max = ethdev_max_mtu(info);
  if (requested < info.min_mtu || requested < 68) {
    error = "port " + label + ": MTU " + std::to_string(requested) + " is below the minimum of " +
            std::to_string(std::max<uint32_t>(info.min_mtu, 68));
    return false;
  }

  // What the PMD really carries, where its report is known to be wrong or
  // where a resource limit that DPDK does not report applies.
  uint32_t pmd_max = ethdev_max;
  std::string why;
  const uint32_t headroom = RTE_PKTMBUF_HEADROOM;
  const uint32_t max_room = UINT16_MAX;
  uint32_t framesz = 0;
  uint32_t if_mtu = 0;  // net_af_packet: the kernel interface's own MTU
  if (driver == "net_af_packet") {
    // Reports 1518-byte frames but carries what its ring slots (framesz)
    // and the interface MTU allow.
    framesz = devarg_u32(devargs, "framesz", kAfPacketDefaultSlot);
    pmd_max = framesz > kAfPacketRxOffset + kFrameOverhead ? framesz - kAfPacketRxOffset - kFrameOverhead : 0;
    why = "its ring slots (framesz=" + std::to_string(framesz) + "; raise framesz and blocksz)";
    if_mtu = host_if_mtu(info.if_index);
    if (if_mtu && if_mtu < pmd_max && requested > ethdev_max) {
      pmd_max = if_mtu;
      why = "the interface MTU (ip link set dev IFACE mtu N)";
    }
  } else if (driver == "net_memif") {
    // Reports 1518-byte frames; frames longer than a buffer are chained
    // over descriptors and land in one of our mbufs.
    pmd_max = 9000;
    why = "the memif buffers";
  } else if (driver == "net_af_xdp") {
    pmd_max = std::min<uint32_t>(ethdev_max, kAfXdpMaxRoom - kAfXdpSlack - kFrameOverhead);
    why = "the AF_XDP umem (one 4 KB page per frame)";
  } else {
    why = "the PMD (max_mtu " + std::to_string(info.max_mtu) + ", max_rx_pktlen " +
          std::to_string(info.max_rx_pktlen) + ")";
  }
  pmd_max = std::min<uint32_t>(pmd_max, max_room - headroom - kFrameOverhead);

  plan.mtu = uint16_t(std::min<uint32_t>(requested, pmd_max));
  if (plan.mtu < requested)
    plan.notices.push_back("MTU " + std::to_string(requested) + " is more than " + driver + " supports here: using " +
                           std::to_string(plan.mtu) + " (limited by " + why + ")");
  if (plan.mtu < 68) {
    error = "port " + label + ": " + driver + " cannot carry a 68-byte MTU (limited by " + why + ")";
    return false;
  }
  plan.ethdev_mtu = uint16_t(std::min<uint32_t>(plan.mtu, ethdev_max));
  plan.set_mtu = plan.mtu <= ethdev_max;
  // net_af_packet's set_mtu is SIOCSIFMTU on the kernel interface: never
  // shrink an interface that already carries our frames (found in the rxe
  // interop tests: a -m 1024 run left a 9000-byte veth at 1500, and the
  // next -m 4096 run on it failed). Raising a smaller one is still done.
  if (if_mtu >= plan.mtu) plan.set_mtu = false;

  const uint32_t frame = plan.mtu + kFrameOverhead;
  uint32_t room;
  if (driver == "net_af_xdp") {
    room = std::clamp<uint32_t>(frame + kAfXdpSlack, RTE_MBUF_DEFAULT_BUF_SIZE, kAfXdpMaxRoom);
  } else {
    room = headroom + std::max<uint32_t>({2048, round_up(frame, 64), framesz ? framesz - kAfPacketTxOffset : 0});
  }
  plan.data_room = uint16_t(std::min(room, max_room));
  return true;
}

}  // namespace uroce::dpdk
