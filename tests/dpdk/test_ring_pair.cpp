// SPDX-License-Identifier: BSD-3-Clause
// The ring-pair link (open_ring_pair) and a vdev opened by name
// (net_ring0): frames cross both ways in order with every byte intact, no
// mbuf is lost, and closing gives every resource back.
#include <catch2/catch.hpp>

#include <rte_ethdev.h>
#include <rte_ring.h>

#include "frames.h"
#include "mbuf_test_util.h"
#include "uroce/port/dpdk_port.h"

namespace uroce::test {
namespace {

constexpr uint64_t kSeed = 20261122;

// Sends `count` frames from `tx` to `rx` in bursts, receives them, and
// checks order and bytes. Frames come from `pool`; all are freed.
void exchange(DpdkPort& tx, DpdkPort& rx, TestPool& pool, uint64_t seed, uint32_t count, size_t max_len) {
  INFO("seed " << seed << ", " << tx.name() << " -> " << rx.name());
  std::vector<std::vector<uint8_t>> sent;
  uint32_t next_rx = 0;
  while (next_rx < count) {
    // Up to 32 frames out...
    rte_mbuf* burst[32];
    uint16_t n = 0;
    while (n < 32 && sent.size() < count) {
      const uint32_t i = uint32_t(sent.size());
      sent.push_back(test_frame(rx.mac(), tx.mac(), seed, i, test_frame_len(seed, i, max_len)));
      burst[n++] = mbuf_from_bytes(pool.get(), sent.back());
    }
    const uint16_t k = tx.tx_burst(burst, n);
    REQUIRE(k == n);  // the ring has room for far more than a burst
    // ...and whatever arrived back in.
    rte_mbuf* in[32];
    const uint16_t got = rx.rx_burst(in, 32);
    REQUIRE(got > 0);
    for (uint16_t j = 0; j < got; ++j) {
      MbufPtr m(in[j]);
      REQUIRE(next_rx < sent.size());
      INFO("frame " << next_rx);
      CHECK(mbuf_bytes(m.get()) == sent[next_rx]);
      ++next_rx;
    }
  }
  rte_mbuf* extra[4];
  CHECK(rx.rx_burst(extra, 4) == 0);
}

uint64_t opackets(const DpdkPort& p) {
  rte_eth_stats s{};
  REQUIRE(rte_eth_stats_get(p.port_id(), &s) == 0);
  return s.opackets;
}
uint64_t ipackets(const DpdkPort& p) {
  rte_eth_stats s{};
  REQUIRE(rte_eth_stats_get(p.port_id(), &s) == 0);
  return s.ipackets;
}

}  // namespace

TEST_CASE("ring pair: two distinct, started ethdev ports with the asked MTU", "[ring-pair]") {
  std::unique_ptr<DpdkPort> a, b;
  std::string error;
  REQUIRE(open_ring_pair("rp_basic", 1500, a, b, error));
  INFO(error);
  REQUIRE(a);
  REQUIRE(b);
  CHECK(a->name() == "net_ring_rp_basic_a");
  CHECK(b->name() == "net_ring_rp_basic_b");
  CHECK(a->port_id() != b->port_id());
  CHECK(rte_eth_dev_is_valid_port(a->port_id()) == 1);
  CHECK(a->driver() == "net_ring");
  CHECK(a->mac() != b->mac());
  for (const DpdkPort* p : {a.get(), b.get()}) {
    INFO(p->mac().to_string());
    CHECK((p->mac().bytes[0] & 0x03) == 0x02);  // locally administered unicast
  }
  CHECK(a->mtu() == 1500);
  CHECK(b->mtu() == 1500);
  CHECK(a->link_up());
  CHECK(b->link_up());
  CHECK(a->notices().empty());
  // Nothing arrives before something is sent.
  rte_mbuf* in[4];
  CHECK(a->rx_burst(in, 4) == 0);
  CHECK(b->rx_burst(in, 4) == 0);
}

TEST_CASE("ring pair carries frames both ways, in order, bytes intact, no mbuf lost", "[ring-pair]") {
  std::unique_ptr<DpdkPort> a, b;
  std::string error;
  REQUIRE(open_ring_pair("rp_data", 1500, a, b, error));
  TestPool pool(1023);
  exchange(*a, *b, pool, kSeed, 500, 1514);
  exchange(*b, *a, pool, kSeed + 1, 500, 1514);
  // A frame sent by one side never comes back to that side.
  rte_mbuf* in[4];
  CHECK(a->rx_burst(in, 4) == 0);
  CHECK(b->rx_burst(in, 4) == 0);
  CHECK(opackets(*a) == 500);
  CHECK(ipackets(*b) == 500);
  CHECK(opackets(*b) == 500);
  CHECK(ipackets(*a) == 500);
  CHECK(pool.avail() == pool.size());
}

TEST_CASE("ring pair with MTU 9000 carries 9014-byte frames", "[ring-pair]") {
  std::unique_ptr<DpdkPort> a, b;
  std::string error;
  REQUIRE(open_ring_pair("rp_jumbo", 9000, a, b, error));
  CHECK(a->mtu() == 9000);
  CHECK(b->mtu() == 9000);
  TestPool pool(255, 9014 + RTE_PKTMBUF_HEADROOM);
  exchange(*a, *b, pool, kSeed + 2, 100, 9014);
  CHECK(pool.avail() == pool.size());
}

TEST_CASE("ring pair: closing frees the ports and rings, and the name can be used again", "[ring-pair]") {
  uint16_t ids[2];
  {
    std::unique_ptr<DpdkPort> a, b;
    std::string error;
    REQUIRE(open_ring_pair("rp_again", 1500, a, b, error));
    ids[0] = a->port_id();
    ids[1] = b->port_id();
    uint16_t id;
    CHECK(rte_eth_dev_get_port_by_name("net_ring_rp_again_a", &id) == 0);
    CHECK(id == ids[0]);
    CHECK(rte_ring_lookup("rp_again_ab") != nullptr);
    // While open, the same name is refused with a reason.
    std::unique_ptr<DpdkPort> c, d;
    std::string error2;
    CHECK_FALSE(open_ring_pair("rp_again", 1500, c, d, error2));
    CHECK(error2.find("rp_again") != std::string::npos);
    CHECK_FALSE(c);
    // One port gone, the other still works (it keeps the rings alive).
    a.reset();
    CHECK(rte_ring_lookup("rp_again_ab") != nullptr);
    rte_mbuf* in[4];
    CHECK(b->rx_burst(in, 4) == 0);
  }
  uint16_t id;
  CHECK(rte_eth_dev_get_port_by_name("net_ring_rp_again_a", &id) != 0);
  CHECK(rte_eth_dev_get_port_by_name("net_ring_rp_again_b", &id) != 0);
  CHECK(rte_eth_dev_is_valid_port(ids[0]) == 0);
  CHECK(rte_eth_dev_is_valid_port(ids[1]) == 0);
  CHECK(rte_ring_lookup("rp_again_ab") == nullptr);
  CHECK(rte_ring_lookup("rp_again_ba") == nullptr);

  std::unique_ptr<DpdkPort> a, b;
  std::string error;
  REQUIRE(open_ring_pair("rp_again", 1500, a, b, error));
  TestPool pool(255);
  exchange(*a, *b, pool, kSeed + 3, 50, 1514);
  CHECK(pool.avail() == pool.size());
}

TEST_CASE("ring pair names: empty, too long, or with a comma are refused", "[ring-pair]") {
  std::unique_ptr<DpdkPort> a, b;
  std::string error;
  CHECK_FALSE(open_ring_pair("", 1500, a, b, error));
  CHECK_FALSE(error.empty());
  error.clear();
  CHECK_FALSE(open_ring_pair(std::string(40, 'x'), 1500, a, b, error));
  CHECK(error.find("characters") != std::string::npos);
  CHECK_FALSE(open_ring_pair("a,b", 1500, a, b, error));
  CHECK_FALSE(a);
  CHECK_FALSE(b);
}

TEST_CASE("DpdkPort::open on a vdev string: net_ring loops frames back, and is removed on close", "[ring-pair]") {
  TestPool pool(255);
  for (int round = 0; round < 2; ++round) {
    INFO("round " << round);
    std::string error;
    auto p = DpdkPort::open({.dev = "net_ring0"}, error);
    INFO(error);
    REQUIRE(p);
    CHECK(p->name() == "net_ring0");
    CHECK(p->driver() == "net_ring");
    CHECK(p->mtu() == 1500);
    // A second DpdkPort on the same ethdev port is refused.
    std::string error2;
    CHECK_FALSE(DpdkPort::open({.dev = "net_ring0"}, error2));
    CHECK(error2.find("net_ring0") != std::string::npos);
    CHECK(error2.find("already open") != std::string::npos);
    // net_ring without arguments is one port whose TX comes back on its RX.
    exchange(*p, *p, pool, kSeed + 10 + uint64_t(round), 40, 1514);
    p.reset();
    uint16_t id;
    CHECK(rte_eth_dev_get_port_by_name("net_ring0", &id) != 0);
  }
  CHECK(pool.avail() == pool.size());
}

TEST_CASE("DpdkPort::open with a MAC override reports that MAC", "[ring-pair]") {
  wire::MacAddr mac;
  REQUIRE(wire::MacAddr::parse("02:00:5e:10:20:30", mac));
  std::string error;
  auto p = DpdkPort::open({.dev = "net_ring1", .mac = mac}, error);
  INFO(error);
  REQUIRE(p);
  CHECK(p->mac() == mac);
  CHECK(p->notices().empty());  // the ring PMD keeps its MAC in software, silently
}

}  // namespace uroce::test

namespace uroce::test {

TEST_CASE("ring pair with queue pairs: each queue of one port is joined to the same queue of the other",
          "[ring-pair]") {
  constexpr uint16_t kQueues = 3;
  std::unique_ptr<DpdkPort> a, b;
  std::string error;
  REQUIRE(open_ring_pair("rp_queues", 1500, a, b, error, kQueues));
  INFO(error);
  REQUIRE(a->queues() == kQueues);
  REQUIRE(b->queues() == kQueues);
  CHECK_FALSE(a->rss());  // the ring PMD does not hash: a queue gets what its peer queue sent
  CHECK(&a->queue(0) == a.get());
  TestPool pool(1023);
  for (uint16_t q = 0; q < kQueues; ++q) {
    for (auto [from, to] : {std::pair{a.get(), b.get()}, std::pair{b.get(), a.get()}}) {
      INFO("queue " << q << ", " << from->name() << " -> " << to->name());
      PacketPort& tx = from->queue(q);
      CHECK(tx.mac() == from->mac());
      CHECK(tx.mtu() == from->mtu());
      const uint32_t i = q * 10u + (from == a.get() ? 0u : 5u);
      const std::vector<uint8_t> frame = test_frame(to->mac(), from->mac(), kSeed + 20, i, 200 + i);
      rte_mbuf* m = mbuf_from_bytes(pool.get(), frame);
      REQUIRE(tx.tx_burst(&m, 1) == 1);
      rte_mbuf* in[4];
      // Nothing on the other queues of the receiver, nor back at the sender.
      for (uint16_t other = 0; other < kQueues; ++other) {
        CHECK(from->queue(other).rx_burst(in, 4) == 0);
        if (other != q) CHECK(to->queue(other).rx_burst(in, 4) == 0);
      }
      REQUIRE(to->queue(q).rx_burst(in, 4) == 1);
      MbufPtr got(in[0]);
      CHECK(mbuf_bytes(got.get()) == frame);
    }
  }
  CHECK(opackets(*a) == kQueues);
  CHECK(ipackets(*b) == kQueues);
  a.reset();
  b.reset();
  CHECK(pool.avail() == pool.size());
  // Every queue's rings went with the ports: the name opens again.
  REQUIRE(open_ring_pair("rp_queues", 1500, a, b, error, kQueues));
}

TEST_CASE("queue pairs: none, or more than the port has, are refused with the port's range", "[ring-pair]") {
  std::unique_ptr<DpdkPort> a, b;
  std::string error;
  CHECK_FALSE(open_ring_pair("rp_noq", 1500, a, b, error, 0));
  CHECK(error.find("0 queue pairs") != std::string::npos);
  CHECK_FALSE(a);
  // More than the PMD has (net_ring opened by name: RTE_PMD_RING_MAX_RX_RINGS).
  auto p = DpdkPort::open({.dev = "net_ring0", .queues = 1000}, error);
  CHECK_FALSE(p);
  INFO(error);
  CHECK(error.find("1000 queue pairs asked for; net_ring has 1 to ") != std::string::npos);
  // ... and the port is released: it opens, with as many as it has.
  p = DpdkPort::open({.dev = "net_ring0", .queues = 2}, error);
  REQUIRE(p);
  CHECK(p->queues() == 2);
}

}  // namespace uroce::test
