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
#include <thread>

#include "frames.h"
#include "mbuf_test_util.h"
#include "rc_real_time.h"
#include "test_port.h"
#include "uroce/port/dpdk_port.h"
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
