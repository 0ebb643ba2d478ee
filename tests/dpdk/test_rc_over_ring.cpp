// SPDX-License-Identifier: BSD-3-Clause
// The whole stack on real ethdev ports: two Devices on a ring pair, in
// real time (TscClock), run RC SEND, WRITE and READ.
#include <catch2/catch.hpp>

#include <rte_ethdev.h>

#include "rc_real_time.h"
#include "uroce/port/dpdk_port.h"

namespace uroce::test {

TEST_CASE("RC SEND, WRITE and READ between two Devices on a ring pair", "[rc-over-ring]") {
  const uint16_t mtu = GENERATE(uint16_t(1500), uint16_t(4200));
  const ibv_mtu path_mtu = mtu >= 4200 ? IBV_MTU_4096 : IBV_MTU_1024;
  INFO("port MTU " << mtu);
  std::unique_ptr<DpdkPort> pa, pb;
  std::string error;
  REQUIRE(open_ring_pair(mtu == 1500 ? "rc_ring" : "rc_ring_j", mtu, pa, pb, error));
  {
    QpOptions o;
    o.mtu = path_mtu;
    o.timeout = 14;  // 67 ms: a descheduled poll loop must not look like loss
    RealTimePair p(*pa, *pb, 77 + mtu, o);
    check_send_write_read(p, 1234 + mtu);

    // The frames went through the ethdev ports, none lost on the rings.
    rte_eth_stats sa{}, sb{};
    REQUIRE(p.quiesce());
    REQUIRE(rte_eth_stats_get(pa->port_id(), &sa) == 0);
    REQUIRE(rte_eth_stats_get(pb->port_id(), &sb) == 0);
    CHECK(sa.opackets > 0);
    CHECK(sb.opackets > 0);
    CHECK(sa.opackets == sb.ipackets);
    CHECK(sb.opackets == sa.ipackets);
    const DeviceCounters ca = p.da->counters(), cb = p.db->counters();
    CHECK(ca.tx_frames == sa.opackets);
    CHECK(cb.rx_frames == sa.opackets);
    CHECK(ca.rx_invalid + ca.rx_icrc_err + ca.rx_unknown_qp == 0);
    CHECK(cb.rx_invalid + cb.rx_icrc_err + cb.rx_unknown_qp == 0);
    // Every TX mbuf is back in its Device's pool.
    std::vector<std::string> leaks;
    CHECK(pools_full("uroce_tx", leaks));
    INFO("leaks: " << leaks.size());
    for (const auto& l : leaks) UNSCOPED_INFO(l);
    CHECK(leaks.empty());
  }
}

}  // namespace uroce::test
