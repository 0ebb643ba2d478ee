// SPDX-License-Identifier: BSD-3-Clause
// ARP/ND between engines on the simulated wire: devices with no static
// neighbour entries find each other, answer for their own addresses only,
// retry and give up on silence, and a QP can connect once the MAC is known.
#include <catch2/catch.hpp>

#include "connected_pair.h"
#include "mbuf_test_util.h"
#include "sim_fabric.h"
#include "wire/neighbor.h"
#include "uroce/verbs/verbs.h"

using namespace uroce;

namespace {

constexpr uint64_t kMs = 1'000'000;

wire::IpAddr ip(const char* text) {
  wire::IpAddr a;
  REQUIRE(wire::IpAddr::parse(text, a));
  return a;
}

// INIT, then the result of the modify to RTR towards `remote`.
int to_rtr(QueuePair& qp, const Device& remote) {
  test::QpOptions o;
  o.qp_access = 0;
  o.max_dest_rd_atomic = 1;
  o.min_rnr_timer = 12;
  REQUIRE(qp.modify(test::init_attr(o), test::kRcInitMask) == 0);
  return qp.modify(test::rtr_attr(o, remote, 0x11, 0), test::kRcRtrMask);
}

}  // namespace

TEST_CASE("Devices resolve each other by ARP and by ND", "[neighbors]") {
  const bool v6 = GENERATE(false, true);
  sim::SimFabric fab(7);
  fab.static_neighbors = false;
  Device& a = fab.add_device(v6 ? "fd00::1" : "10.0.0.1");
  Device& b = fab.add_device(v6 ? "fd00::2" : "10.0.0.2");
  fab.add_device(v6 ? "fd00::3" : "10.0.0.3");  // a bystander: must not answer for others
  const wire::IpAddr ip_b = b.gids()[0];
  CHECK(a.resolve_neighbor(ip_b) == NeighborState::resolving);
  REQUIRE(fab.run_until([&] { return a.resolve_neighbor(ip_b) == NeighborState::reachable; }, 100 * kMs));
  CHECK(b.counters().tx_neighbor == 1);              // one reply, from b only
  CHECK(fab.device(2).counters().tx_neighbor == 0);  // the bystander stays quiet
  // b learned a from the request aimed at it: no resolution needed back.
  CHECK(b.resolve_neighbor(a.gids()[0]) == NeighborState::reachable);
  CHECK(fab.device(2).resolve_neighbor(a.gids()[0]) == NeighborState::resolving);
}

TEST_CASE("A QP reaches RTR once its peer's MAC is resolved", "[neighbors]") {
  sim::SimFabric fab(8);
  fab.static_neighbors = false;
  Device& a = fab.add_device("10.0.0.1");
  Device& b = fab.add_device("10.0.0.2");
  auto pd = a.alloc_pd();
  int err = 0;
  auto cq = a.create_cq(16, err);
  QpInitAttr init;
  init.send_cq = init.recv_cq = cq.get();
  init.qp_type = IBV_QPT_RC;
  init.cap.max_send_wr = init.cap.max_recv_wr = 4;
  init.cap.max_send_sge = init.cap.max_recv_sge = 1;
  auto qp = pd->create_qp(init, err);
  INFO("create_qp errno " << err);
  REQUIRE(qp);
  CHECK(to_rtr(*qp, b) == EHOSTUNREACH);  // and resolution starts
  CHECK(a.resolve_neighbor(b.gids()[0]) == NeighborState::resolving);
  REQUIRE(fab.run_until([&] { return a.resolve_neighbor(b.gids()[0]) == NeighborState::reachable; }, 100 * kMs));
  auto qp2 = pd->create_qp(init, err);
  CHECK(to_rtr(*qp2, b) == 0);
}

TEST_CASE("Resolution of a silent address retries, then fails, and can start over", "[neighbors]") {
  sim::SimFabric fab(9);
  fab.static_neighbors = false;
  DeviceConfig cfg;
  cfg.neighbor_retry_ms = 100;
  cfg.neighbor_timeout_ms = 1000;
  Device& a = fab.add_device("10.0.0.1", cfg);
  fab.add_device("10.0.0.2");
  const wire::IpAddr nobody = ip("10.0.0.99");
  CHECK(a.resolve_neighbor(nobody) == NeighborState::resolving);
  fab.run_for(999 * kMs);
  CHECK(a.resolve_neighbor(nobody) == NeighborState::resolving);
  CHECK(a.counters().tx_neighbor == 10);  // at 0, 100, ..., 900 ms
  fab.run_for(2 * kMs);
  CHECK(a.resolve_neighbor(nobody) == NeighborState::resolving);  // failed, then asked again
  CHECK(a.counters().tx_neighbor == 11);
}

TEST_CASE("What a forged ARP frame cannot teach: static entries, probes, group MACs, our own address",
          "[neighbors]") {
  sim::SimFabric fab(10);
  fab.static_neighbors = false;
  Device& a = fab.add_device("10.0.0.1");
  const wire::MacAddr good{{0x02, 0, 0, 0, 0, 0x42}};
  a.add_neighbor(ip("10.0.0.66"), good);  // static
  const wire::MacAddr forger{{0x02, 0xBA, 0xD0, 0, 0, 1}};
  sim::SimPort& evil = fab.wire().add_port(forger);
  test::TestPool pool;
  auto ask_a_as = [&](const wire::MacAddr& mac, const char* sender) {
    uint8_t frame[wire::kNeighborFrameMax];
    const size_t len = wire::build_arp_request(frame, mac, ip(sender), a.gids()[0]);
    rte_mbuf* m = test::mbuf_from_bytes(pool.get(), {frame, len});
    REQUIRE(evil.tx_burst(&m, 1) == 1);
    // The forger's port must be read too, or its replies stay in flight.
    fab.run_until(
        [&] {
          rte_mbuf* in[8];
          for (uint16_t n; (n = evil.rx_burst(in, 8)) > 0;) rte_pktmbuf_free_bulk(in, n);
          return false;
        },
        kMs);
  };
  wire::MacAddr got;
  ask_a_as(forger, "10.0.0.66");  // claims the static neighbour's address
  REQUIRE(a.neighbor_mac(ip("10.0.0.66"), got));
  CHECK(got == good);
  ask_a_as(forger, "10.0.0.1");  // claims a's own address
  REQUIRE(a.neighbor_mac(ip("10.0.0.1"), got));  // the fabric's entry for a itself
  CHECK(got == fab.port(0).mac());
  ask_a_as(forger, "0.0.0.0");  // an ARP probe
  CHECK_FALSE(a.neighbor_mac(ip("0.0.0.0"), got));
  ask_a_as(wire::MacAddr{{0x01, 0, 0x5E, 0, 0, 1}}, "10.0.0.77");  // a multicast "sender"
  CHECK_FALSE(a.neighbor_mac(ip("10.0.0.77"), got));
  ask_a_as(forger, "10.0.0.88");  // a plausible request aimed at a: learned, and answered
  REQUIRE(a.neighbor_mac(ip("10.0.0.88"), got));
  CHECK(got == forger);
  CHECK(a.counters().tx_neighbor == 5);  // every request for a's address got its reply
}

TEST_CASE("ARP requests from ever new senders keep the table bounded; static and resolving entries stay",
          "[neighbors]") {
  sim::SimFabric fab(11);
  fab.static_neighbors = false;
  DeviceConfig cfg;
  cfg.neighbor_retry_ms = 300'000;  // asked once, and resolving through the flood
  cfg.neighbor_timeout_ms = 600'000;
  Device& a = fab.add_device("10.0.0.1", cfg);
  Device& b = fab.add_device("10.0.0.2");
  const wire::MacAddr good{{0x02, 0, 0, 0, 0, 0x42}};
  a.add_neighbor(ip("10.0.0.66"), good);
  const wire::IpAddr silent = ip("10.0.0.99");
  REQUIRE(a.resolve_neighbor(silent) == NeighborState::resolving);
  const wire::MacAddr forger{{0x02, 0xBA, 0xD0, 0, 0, 2}};
  sim::SimPort& evil = fab.wire().add_port(forger);
  test::TestPool pool;
  // One request aimed at a from each of more senders than the table holds:
  // a learns every one of them (it answers each).
  constexpr uint32_t kSenders = 16384 + 2000;
  auto sender = [](uint32_t i) {
    wire::IpAddr s;
    REQUIRE(wire::IpAddr::parse(("10.1." + std::to_string(i / 250) + "." + std::to_string(1 + i % 250)).c_str(), s));
    return s;
  };
  for (uint32_t i = 0; i < kSenders; i += 32) {
    rte_mbuf* burst[32];
    uint16_t n = 0;
    for (uint32_t j = i; j < std::min(i + 32, kSenders); ++j) {
      uint8_t frame[wire::kNeighborFrameMax];
      const size_t len = wire::build_arp_request(frame, forger, sender(j), a.gids()[0]);
      burst[n++] = test::mbuf_from_bytes(pool.get(), {frame, len});
    }
    REQUIRE(evil.tx_burst(burst, n) == n);
    fab.run_until(
        [&] {
          rte_mbuf* in[32];
          for (uint16_t got; (got = evil.rx_burst(in, 32)) > 0;) rte_pktmbuf_free_bulk(in, got);
          return false;
        },
        kMs);
  }
  CHECK(a.counters().tx_neighbor == kSenders + 1);  // every request answered, and the first ask for `silent`
  wire::MacAddr got;
  CHECK_FALSE(a.neighbor_mac(sender(0), got));  // learned, then dropped when the table filled
  REQUIRE(a.neighbor_mac(sender(kSenders - 1), got));
  CHECK(got == forger);
  REQUIRE(a.neighbor_mac(ip("10.0.0.66"), got));
  CHECK(got == good);
  CHECK(a.resolve_neighbor(silent) == NeighborState::resolving);
  // The table still takes what a's own QPs need.
  REQUIRE(fab.run_until([&] { return a.resolve_neighbor(b.gids()[0]) == NeighborState::reachable; }, 100 * kMs));
}
