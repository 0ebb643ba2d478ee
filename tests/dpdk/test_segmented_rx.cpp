// SPDX-License-Identifier: BSD-3-Clause
// Frames that arrive as chains of mbuf segments (memif chains any frame
// above its buffer size; NICs with scatter RX do the same): the engine must
// gather the payload and handle the packet exactly as a flat one. One
// Device of a ring pair receives through a port that re-chains every frame
// into real mbufs of at most 700 bytes before the engine sees it.
#include <catch2/catch.hpp>

#include <rte_mbuf.h>

#include "rc_real_time.h"
#include "uroce/port/dpdk_port.h"

namespace uroce::test {
namespace {

class SegmentingPort final : public PacketPort {
 public:
  SegmentingPort(PacketPort& inner, uint16_t seg_bytes, const char* pool_name) : inner_(inner), seg_(seg_bytes) {
    pool_ = rte_pktmbuf_pool_create(pool_name, 8191, 0, 0, RTE_PKTMBUF_HEADROOM + seg_bytes, SOCKET_ID_ANY);
  }
  ~SegmentingPort() override { rte_mempool_free(pool_); }
  bool ok() const { return pool_ != nullptr; }
  uint64_t chained = 0;

  uint16_t rx_burst(rte_mbuf** pkts, uint16_t n) override {
    const uint16_t got = inner_.rx_burst(pkts, n);
    for (uint16_t i = 0; i < got; ++i) {
      rte_mbuf* c = rechain(pkts[i]);
      rte_pktmbuf_free(pkts[i]);
      pkts[i] = c;
    }
    return got;
  }
  uint16_t tx_burst(rte_mbuf** pkts, uint16_t n) override { return inner_.tx_burst(pkts, n); }
  wire::MacAddr mac() const override { return inner_.mac(); }
  uint16_t mtu() const override { return inner_.mtu(); }

 private:
  rte_mbuf* rechain(const rte_mbuf* m) {
    rte_mbuf* head = nullptr;
    for (uint32_t off = 0; off < m->pkt_len; off += seg_) {
      const uint16_t len = uint16_t(std::min<uint32_t>(seg_, m->pkt_len - off));
      rte_mbuf* s = rte_pktmbuf_alloc(pool_);
      REQUIRE(s != nullptr);
      void* dst = rte_pktmbuf_append(s, len);
      const void* src = rte_pktmbuf_read(m, off, len, dst);
      REQUIRE(src != nullptr);
      if (src != dst) std::memcpy(dst, src, len);
      if (head == nullptr) head = s;
      else REQUIRE(rte_pktmbuf_chain(head, s) == 0);
    }
    if (head->nb_segs > 1) ++chained;
    return head;
  }

  PacketPort& inner_;
  uint16_t seg_;
  rte_mempool* pool_ = nullptr;
};

}  // namespace

TEST_CASE("Payloads spread over mbuf segments are gathered: SEND, WRITE, READ", "[segmented-rx]") {
  std::unique_ptr<DpdkPort> pa, pb;
  std::string error;
  REQUIRE(open_ring_pair("seg_rx", 4200, pa, pb, error));
  SegmentingPort sb(*pb, 700, "seg_rx_b");  // b receives chains of 700-byte segments
  SegmentingPort sa(*pa, 700, "seg_rx_a");  // and so does a (READ responses, ACKs)
  REQUIRE(sa.ok());
  REQUIRE(sb.ok());
  {
    QpOptions o;
    o.mtu = IBV_MTU_4096;
    o.timeout = 14;
    RealTimePair p(sa, sb, 91, o);
    check_send_write_read(p, 4321);
    REQUIRE(p.quiesce());
    CHECK(sa.chained > 0);
    CHECK(sb.chained > 0);
    const DeviceCounters ca = p.da->counters(), cb = p.db->counters();
    CHECK(cb.rx_gathered > 0);  // b's requests (SEND, WRITE) arrived in pieces
    CHECK(ca.rx_gathered > 0);  // and a's READ responses
    CHECK(ca.rx_invalid + cb.rx_invalid + ca.rx_icrc_err + cb.rx_icrc_err == 0);
    CHECK(ca.transport.retransmitted_pkts + cb.transport.retransmitted_pkts == 0);
  }
}

}  // namespace uroce::test
