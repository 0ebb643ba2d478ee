// SPDX-License-Identifier: BSD-3-Clause
// Real kernel links: two af_packet ports on the two ends of a veth pair
// (in this process's private network namespace), raw frames both ways and
// then the whole stack (RC SEND, WRITE, READ) over them, at MTU 1500 and
// with jumbo frames (path MTU 4096).
#include <catch2/catch.hpp>

#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>

#include <chrono>
#include <cstring>
#include <map>
#include <set>
#include <thread>

#include "frames.h"
#include "mbuf_test_util.h"
#include "rc_real_time.h"
#include "test_port.h"
#include "uroce/port/dpdk_port.h"
#include "uroce/wire/byte_order.h"
#include "uroce/wire/eth.h"
#include "uroce/wire/ipv4.h"
#include "veth_netns.h"

namespace uroce::test {
namespace {

std::string prefix(const char* tag) { return "uroce-" + std::string(tag) + std::to_string(getpid() % 100000); }

std::unique_ptr<DpdkPort> open_af_packet(int index, const std::string& iface, uint16_t mtu,
                                         const std::string& extra = "") {
  return open_test_port("net_af_packet" + std::to_string(index) + ",iface=" + iface + extra, mtu);
}

bool wait_link(const DpdkPort& a, const DpdkPort& b) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!(a.link_up() && b.link_up())) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

// Sends `count` test frames from tx and collects them on rx within a
// deadline; frames of other EtherTypes (kernel chatter) are ignored.
void raw_exchange(DpdkPort& tx, DpdkPort& rx, uint64_t seed, uint32_t count, size_t max_len) {
  INFO("seed " << seed << ", " << tx.name() << " -> " << rx.name());
  TestPool pool(511, uint16_t(max_len + RTE_PKTMBUF_HEADROOM));
  std::vector<std::vector<uint8_t>> sent;
  for (uint32_t i = 0; i < count; ++i) {
    sent.push_back(test_frame(rx.mac(), tx.mac(), seed, i, test_frame_len(seed, i, max_len)));
    rte_mbuf* m = mbuf_from_bytes(pool.get(), sent.back());
    REQUIRE(tx.tx_burst(&m, 1) == 1);
  }
  std::vector<std::vector<uint8_t>> got;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (got.size() < count && std::chrono::steady_clock::now() < deadline) {
    rte_mbuf* in[32];
    const uint16_t n = rx.rx_burst(in, 32);
    for (uint16_t j = 0; j < n; ++j) {
      MbufPtr m(in[j]);
      std::vector<uint8_t> bytes = mbuf_bytes(m.get());
      CHECK(m->nb_segs == 1);  // the engine needs frames in one segment
      if (bytes.size() >= 14 && bytes[12] == (kTestEtherType >> 8) && bytes[13] == (kTestEtherType & 0xFF))
        got.push_back(std::move(bytes));
    }
  }
  // A veth does not drop or reorder a few frames sent at this pace.
  REQUIRE(got.size() == count);
  for (uint32_t i = 0; i < count; ++i) {
    INFO("frame " << i);
    CHECK(got[i] == sent[i]);
  }
  CHECK(pool.avail() == pool.size());
}

}  // namespace

TEST_CASE("af_packet on a veth pair: frames both ways, then RC SEND, WRITE and READ", "[af-packet]") {
  VethPair veth(prefix("t"), 1500);
  INFO(veth.error());
  REQUIRE(veth.ok());
  auto pa = open_af_packet(0, veth.a(), 1500);
  auto pb = open_af_packet(1, veth.b(), 1500);
  CHECK(pa->driver() == "net_af_packet");
  CHECK(pa->mtu() == 1500);
  CHECK(pa->mac() != pb->mac());
  REQUIRE(wait_link(*pa, *pb));

  raw_exchange(*pa, *pb, 501, 64, 1514);
  raw_exchange(*pb, *pa, 502, 64, 1514);

  QpOptions o;
  o.mtu = IBV_MTU_1024;
  o.timeout = 14;
  {
    RealTimePair p(*pa, *pb, 601, o);
    check_send_write_read(p, 701);
    CHECK(p.da->counters().rx_icrc_err == 0);
    CHECK(p.db->counters().rx_icrc_err == 0);
  }
  // The Devices are gone: every RX mbuf they were handed is back.
  std::vector<std::string> leaks;
  CHECK(pools_full("uroce_rx", leaks));
  for (const auto& l : leaks) UNSCOPED_INFO(l);
  CHECK(leaks.empty());
}

namespace {

// An IPv4/UDP frame of flow `sport` to 4791, as a QP's frames are.
std::vector<uint8_t> udp_frame(const wire::MacAddr& dst, const wire::MacAddr& src, uint16_t sport, uint8_t seq) {
  std::vector<uint8_t> f(14 + 20 + 8 + 16, 0);
  std::memcpy(f.data(), dst.bytes.data(), 6);
  std::memcpy(f.data() + 6, src.bytes.data(), 6);
  wire::store_be16(f.data() + 12, wire::kEtherTypeIpv4);
  uint8_t* ip = f.data() + 14;
  const uint8_t hdr[20] = {0x45, 0, 0, 44, 0, 0, 0x40, 0, 64, 17, 0, 0, 10, 9, 0, 1, 10, 9, 0, 2};
  std::memcpy(ip, hdr, sizeof hdr);
  wire::store_be16(ip + 10, wire::ipv4_header_checksum(ip, 20));
  uint8_t* udp = ip + 20;
  wire::store_be16(udp, sport);
  wire::store_be16(udp + 2, 4791);
  wire::store_be16(udp + 4, 8 + 16);
  udp[8] = seq;
  return f;
}

}  // namespace

TEST_CASE("af_packet with queue pairs: the kernel spreads flows over the queues, each flow on one", "[af-packet]") {
  VethPair veth(prefix("q"), 1500);
  INFO(veth.error());
  REQUIRE(veth.ok());
  auto pa = open_af_packet(0, veth.a(), 1500);
  auto pb = open_test_port("net_af_packet1,iface=" + veth.b() + ",qpairs=2", 1500, 2);
  REQUIRE(pb->queues() == 2);
  CHECK_FALSE(pb->rss());  // af_packet's spreading is the kernel's (PACKET_FANOUT_HASH), not RSS
  REQUIRE(wait_link(*pa, *pb));
  constexpr uint16_t kFlows = 64, kPerFlow = 3;
  TestPool pool(511);
  for (uint8_t seq = 0; seq < kPerFlow; ++seq) {
    for (uint16_t f = 0; f < kFlows; ++f) {
      rte_mbuf* m = mbuf_from_bytes(pool.get(), udp_frame(pb->mac(), pa->mac(), uint16_t(49152 + f), seq));
      REQUIRE(pa->tx_burst(&m, 1) == 1);
    }
  }
  std::map<uint16_t, std::set<uint16_t>> queues_of;  // flow -> queues it arrived on
  unsigned got = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (got < kFlows * kPerFlow && std::chrono::steady_clock::now() < deadline) {
    for (uint16_t q = 0; q < 2; ++q) {
      rte_mbuf* in[32];
      const uint16_t n = pb->queue(q).rx_burst(in, 32);
      for (uint16_t j = 0; j < n; ++j) {
        MbufPtr m(in[j]);
        const std::vector<uint8_t> b = mbuf_bytes(m.get());
        if (b.size() < 42 || wire::load_be16(b.data() + 12) != wire::kEtherTypeIpv4 || b[23] != 17) continue;
        queues_of[wire::load_be16(b.data() + 34)].insert(q);
        ++got;
      }
    }
  }
  REQUIRE(got == kFlows * kPerFlow);
  REQUIRE(queues_of.size() == kFlows);
  std::set<uint16_t> used;
  for (const auto& [flow, qs] : queues_of) {
    INFO("UDP source port " << flow);
    CHECK(qs.size() == 1);
    used.insert(qs.begin(), qs.end());
  }
  CHECK(used.size() == 2);  // 64 flows all hashed to one queue: 1 in 2^63
  CHECK(pool.avail() == pool.size());
}

TEST_CASE("af_packet with jumbo frames: MTU 4200 carries RC at path MTU 4096", "[af-packet]") {
  VethPair veth(prefix("j"), 4200);
  INFO(veth.error());
  REQUIRE(veth.ok());
  // Ring slots of 8 KB hold a 4.2 KB frame (the default 2 KB would not).
  const std::string slots = ",framesz=8192,blocksz=8192,framecnt=512";
  auto pa = open_af_packet(2, veth.a(), 4200, slots);
  auto pb = open_af_packet(3, veth.b(), 4200, slots);
  CHECK(pa->mtu() == 4200);
  CHECK(pb->mtu() == 4200);
  REQUIRE(wait_link(*pa, *pb));
  raw_exchange(*pa, *pb, 503, 32, 4214);

  QpOptions o;
  o.mtu = IBV_MTU_4096;
  o.timeout = 14;
  RealTimePair p(*pa, *pb, 602, o);
  check_send_write_read(p, 702);
}

TEST_CASE("af_packet: an MTU above what the interface and ring slots allow is clamped, with a notice", "[af-packet]") {
  VethPair veth(prefix("c"), 1500);
  INFO(veth.error());
  REQUIRE(veth.ok());
  auto pa = open_af_packet(4, veth.a(), 9000);  // default 2 KB slots, interface MTU 1500
  CHECK(pa->mtu() == 1500);
  REQUIRE(pa->notices().size() == 1);
  CHECK(pa->notices()[0].find("MTU 9000") != std::string::npos);
}

TEST_CASE("af_packet: a smaller port MTU leaves a larger interface MTU alone", "[af-packet]") {
  VethPair veth(prefix("m"), 9000);
  INFO(veth.error());
  REQUIRE(veth.ok());
  auto if_mtu = [&] {
    ifreq ifr{};
    std::snprintf(ifr.ifr_name, IFNAMSIZ, "%s", veth.a().c_str());
    const int s = ::socket(AF_INET, SOCK_DGRAM, 0);
    const int rc = ::ioctl(s, SIOCGIFMTU, &ifr);
    ::close(s);
    return rc == 0 ? ifr.ifr_mtu : -1;
  };
  REQUIRE(if_mtu() == 9000);
  {
    auto pa = open_af_packet(7, veth.a(), 1500);
    CHECK(pa->mtu() == 1500);
  }
  CHECK(if_mtu() == 9000);  // was 1500: SIOCSIFMTU from the PMD's set_mtu
}

TEST_CASE("af_packet ports are removed on close: the same vdev opens again", "[af-packet]") {
  VethPair veth(prefix("r"), 1500);
  INFO(veth.error());
  REQUIRE(veth.ok());
  for (int round = 0; round < 2; ++round) {
    INFO("round " << round);
    auto pa = open_af_packet(5, veth.a(), 1500);
    auto pb = open_af_packet(6, veth.b(), 1500);
    REQUIRE(wait_link(*pa, *pb));
    raw_exchange(*pa, *pb, 510 + uint64_t(round), 8, 1514);
  }
}

}  // namespace uroce::test
