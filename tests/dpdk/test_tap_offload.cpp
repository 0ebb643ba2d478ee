// SPDX-License-Identifier: BSD-3-Clause
// IPv4 header checksum offload on a port that has it: two net_tap ports
// joined by a kernel bridge (in this process's private namespace). The
// engine must leave the checksum zero and flag the frame; the tap PMD
// fills it in; the receiving engine checks every IPv4 checksum, so the
// traffic only completes if the offload really happened.
#include <catch2/catch.hpp>

#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <thread>

#include "rc_real_time.h"
#include "skip.h"
#include "test_port.h"
#include "uroce/capture/capturing_port.h"
#include "uroce/port/dpdk_port.h"
#include "uroce/port/tsc_clock.h"
#include "uroce/wire/byte_order.h"
#include "uroce/wire/ipv4.h"
#include "veth_netns.h"

namespace uroce::test {
namespace {

// Passes frames on, counting IPv4 frames flagged for checksum offload whose
// checksum field the engine left zero (and any it did not).
class OffloadWatch final : public PacketPort {
 public:
  explicit OffloadWatch(PacketPort& inner) : inner_(inner) {}
  uint16_t rx_burst(rte_mbuf** pkts, uint16_t n) override { return inner_.rx_burst(pkts, n); }
  uint16_t tx_burst(rte_mbuf** pkts, uint16_t n) override {
    for (uint16_t i = 0; i < n; ++i) inspect(pkts[i]);
    return inner_.tx_burst(pkts, n);
  }
  wire::MacAddr mac() const override { return inner_.mac(); }
  uint16_t mtu() const override { return inner_.mtu(); }
  TxChains tx_chains() const override { return inner_.tx_chains(); }
  bool tx_ipv4_checksum() const override { return inner_.tx_ipv4_checksum(); }

  uint32_t offloaded = 0, not_offloaded = 0;

 private:
  void inspect(const rte_mbuf* m) {
    const auto* p = rte_pktmbuf_mtod(m, const uint8_t*);
    if (m->data_len < 34 || wire::load_be16(p + 12) != 0x0800) return;  // ARP, IPv6
    const bool flagged = (m->ol_flags & RTE_MBUF_F_TX_IP_CKSUM) && m->l2_len == 14 && m->l3_len == 20;
    if (flagged && wire::load_be16(p + 14 + 10) == 0)
      ++offloaded;
    else
      ++not_offloaded;
  }
  PacketPort& inner_;
};

bool run(const std::vector<std::string>& args) {
  std::string out;
  const int rc = run_ip(args, out);
  INFO("ip " << args.front() << ": " << out);
  return rc == 0;
}

std::unique_ptr<DpdkPort> open_tap(int index, const std::string& iface) {
  return open_test_port("net_tap" + std::to_string(index) + ",iface=" + iface);
}

// IPv4 UDP frames in the capture, and how many of them have a wrong header
// checksum.
std::pair<uint32_t, uint32_t> check_capture(const std::string& path) {
  std::string error;
  auto r = capture::PcapReader::open(path, error);
  INFO(error);
  REQUIRE(r);
  uint32_t ipv4 = 0, bad = 0;
  capture::CapturedFrame f;
  while (r->next(f)) {
    // RoCE only: the kernel's own IPv4 frames (IGMP reports) have options.
    if (f.bytes.size() < 34 || wire::load_be16(f.bytes.data() + 12) != 0x0800 || f.bytes[14 + 9] != 17) continue;
    ++ipv4;
    bad += wire::ipv4_header_checksum(f.bytes.data() + 14, 20) != 0;
  }
  return {ipv4, bad};
}

}  // namespace

TEST_CASE("IPv4 checksums are left to a port that offloads them", "[tap-offload]") {
  if (access("/dev/net/tun", R_OK | W_OK) != 0) skip_test("no /dev/net/tun: net_tap cannot be tested here");
  const std::string pre = "ut" + std::to_string(getpid() % 100000);
  auto ta = open_tap(0, pre + "a");
  auto tb = open_tap(1, pre + "b");
  REQUIRE(ta->tx_ipv4_checksum());  // the tap PMD advertises RTE_ETH_TX_OFFLOAD_IPV4_CKSUM
  // The port takes multicast (IPv6 neighbour solicitations); tap filters it.
  CHECK(rte_eth_allmulticast_get(ta->port_id()) == 1);
  REQUIRE(run({"link", "add", pre + "br", "type", "bridge"}));
  // The kernel side of a tap starts with the PMD's MAC; a bridge would take
  // frames to that MAC as its own, so the kernel sides get other MACs.
  int k = 0;
  for (const std::string& i : {pre + "a", pre + "b"}) {
    REQUIRE(run({"link", "set", i, "address", "02:00:5e:00:00:0" + std::to_string(++k)}));
    REQUIRE(run({"link", "set", i, "master", pre + "br"}));
    REQUIRE(run({"link", "set", i, "up"}));
  }
  REQUIRE(run({"link", "set", pre + "br", "up"}));

  // Side a also records what it sends and receives: the capture must show
  // the checksums the port fills in, not the zeros the engine leaves.
  const std::string pcap = "/tmp/" + pre + ".pcap";
  std::string error;
  auto writer = capture::PcapWriter::create(pcap, error);
  REQUIRE(writer);
  TscClock clock;
  OffloadWatch wa(*ta), wb(*tb);
  capture::CapturingPort ca(wa, *writer, clock);
  REQUIRE(ca.tx_ipv4_checksum());
  {
    RealTimePair pair(ca, wb, 61);
    check_send_write_read(pair, 61);
    // Two QPs of one device: their frames loop back inside the engine and
    // never reach the port that would fill the checksum in.
    QpOptions o;
    o.bytes = 1 << 16;
    Side x, y;
    connect_pair(x, *pair.da, with_psn(o, 5), y, *pair.da, with_psn(o, 9));
    std::memset(x.buf(), 0x5A, 3000);
    REQUIRE(post_recv(y, 1, 0, 4096) == 0);
    REQUIRE(post_wr(x, IBV_WR_SEND, 2, 0, 3000) == 0);
    auto wy = pair.wait(y, 1);
    REQUIRE(wy.size() == 1);
    CHECK(wy[0].status == IBV_WC_SUCCESS);
    CHECK(std::memcmp(x.buf(), y.buf(), 3000) == 0);
    CHECK(pair.da->counters().rx_invalid == 0);
  }
  REQUIRE(writer->flush(error));
  const auto [ipv4, bad] = check_capture(pcap);
  unlink(pcap.c_str());
  CHECK(ipv4 > 0);
  CHECK(bad == 0);
  INFO("a: " << wa.offloaded << " offloaded, " << wa.not_offloaded << " not");
  CHECK(wa.offloaded > 0);
  CHECK(wb.offloaded > 0);  // ACKs and READ responses
  CHECK(wa.not_offloaded == 0);
  CHECK(wb.not_offloaded == 0);
  run({"link", "del", pre + "br"});
}

}  // namespace uroce::test
