// SPDX-License-Identifier: BSD-3-Clause
// Zero-copy TX: on ports that take chained mbufs, payloads of at least
// zero_copy_min bytes leave as segments pointing into the registered
// region. The data must arrive intact (the receiver checks every ICRC),
// small payloads and inline data are still copied, and a region cannot be
// deregistered while a frame pointing into it sits in some queue.
#include <catch2/catch.hpp>

#include <rte_mbuf.h>

#include <vector>

#include "rc_real_time.h"
#include "uroce/port/dpdk_port.h"

namespace uroce::test {
namespace {

// Passes frames on, keeping an extra reference to each, as a NIC's TX ring
// does until it has sent them.
class HoldingPort final : public PacketPort {
 public:
  explicit HoldingPort(PacketPort& inner) : inner_(inner) {}
  ~HoldingPort() override { release(); }
  uint16_t rx_burst(rte_mbuf** pkts, uint16_t n) override { return inner_.rx_burst(pkts, n); }
  uint16_t tx_burst(rte_mbuf** pkts, uint16_t n) override {
    if (holding) {
      for (uint16_t i = 0; i < n; ++i) {
        rte_pktmbuf_refcnt_update(pkts[i], 1);
        held_.push_back(pkts[i]);
      }
    }
    const uint16_t k = inner_.tx_burst(pkts, n);
    return k;
  }
  wire::MacAddr mac() const override { return inner_.mac(); }
  uint16_t mtu() const override { return inner_.mtu(); }
  TxChains tx_chains() const override { return inner_.tx_chains(); }
  void release() {
    for (rte_mbuf* m : held_) rte_pktmbuf_free(m);
    held_.clear();
  }
  bool holding = false;
  const std::vector<rte_mbuf*>& held() const { return held_; }

 private:
  PacketPort& inner_;
  std::vector<rte_mbuf*> held_;
};

// A signaled WRITE of the first `len` bytes of `mr` to b, every frame of it
// held by `ha`; returns its completion(s).
std::vector<ibv_wc> write_held(RealTimePair& p, HoldingPort& ha, MemoryRegion& mr, uint32_t len) {
  ibv_sge sge{reinterpret_cast<uintptr_t>(mr.addr()), len, mr.lkey()};
  SendWr w;
  w.wr_id = 1;
  w.opcode = IBV_WR_RDMA_WRITE;
  w.sg_list = &sge;
  w.num_sge = 1;
  w.send_flags = IBV_SEND_SIGNALED;
  w.wr.rdma.remote_addr = p.b.addr(0);
  w.wr.rdma.rkey = p.b.mr->rkey();
  const SendWr* bad = nullptr;
  ha.holding = true;
  REQUIRE(p.a.qp->post_send(&w, &bad) == 0);
  auto wc = p.wait(p.a, 1);
  ha.holding = false;  // what is held stays held until release()
  return wc;
}

}  // namespace

TEST_CASE("Zero-copy TX: data intact, small payloads copied, the counter says which", "[zero-copy]") {
  std::unique_ptr<DpdkPort> pa, pb;
  std::string error;
  REQUIRE(open_ring_pair("zc", 4200, pa, pb, error));
  REQUIRE(pa->tx_chains() == TxChains::any_memory);  // the ring PMD takes chains, by address
  QpOptions o;
  o.mtu = IBV_MTU_4096;
  o.timeout = 14;
  RealTimePair p(*pa, *pb, 5, o);
  check_send_write_read(p, 99);  // 5000-byte SEND, 64 KiB WRITE: zero-copy packets
  const uint64_t zc = p.da->counters().transport.zero_copy_pkts;
  CHECK(zc >= 16);  // the 64 KiB WRITE alone is 16 packets of 4096
  CHECK(p.db->counters().transport.zero_copy_pkts == 0);  // READ responses are copied (a snapshot)
  // Below zero_copy_min (1024 by default): copied.
  std::memset(p.b.buf(), 0, 512);
  for (uint32_t i = 0; i < 512; ++i) p.a.buf()[i] = uint8_t(i * 7);
  REQUIRE(post_wr(p.a, IBV_WR_RDMA_WRITE, 9, 0, 512, p.b.addr(0), p.b.mr->rkey()) == 0);
  REQUIRE(p.wait(p.a, 1).size() == 1);
  CHECK(std::memcmp(p.a.buf(), p.b.buf(), 512) == 0);
  CHECK(p.da->counters().transport.zero_copy_pkts == zc);
}

TEST_CASE("A region with frames still queued cannot be deregistered", "[zero-copy]") {
  std::unique_ptr<DpdkPort> pa, pb;
  std::string error;
  REQUIRE(open_ring_pair("zc_hold", 1500, pa, pb, error));
  HoldingPort ha(*pa);
  QpOptions o;
  o.timeout = 14;
  RealTimePair p(ha, *pb, 6, o);
  int err = 0;
  auto mr = p.a.pd->alloc_mr(8192, IBV_ACCESS_LOCAL_WRITE, err);
  REQUIRE(mr);
  std::memset(mr->addr(), 0x5C, 4096);
  auto wc = write_held(p, ha, *mr, 4096);
  REQUIRE(wc.size() == 1);
  CHECK(wc[0].status == IBV_WC_SUCCESS);
  CHECK(p.b.buf()[4095] == 0x5C);
  // Completed, but the "NIC" still holds the frames that point into it.
  CHECK(p.a.pd->dereg_mr(mr) == EBUSY);
  REQUIRE(mr);
  ha.release();
  CHECK(p.a.pd->dereg_mr(mr) == 0);
}

TEST_CASE("A region destroyed with frames still queued keeps its memory until they are freed", "[zero-copy]") {
  std::unique_ptr<DpdkPort> pa, pb;
  std::string error;
  REQUIRE(open_ring_pair("zc_gone", 1500, pa, pb, error));
  HoldingPort ha(*pa);
  QpOptions o;
  o.timeout = 14;
  RealTimePair p(ha, *pb, 7, o);
  int err = 0;
  auto mr = p.a.pd->alloc_mr(8192, IBV_ACCESS_LOCAL_WRITE, err);
  REQUIRE(mr);
  std::memset(mr->addr(), 0x6D, 4096);
  REQUIRE(write_held(p, ha, *mr, 1024).size() == 1);
  mr.reset();  // as an application ignoring dereg_mr's EBUSY would
  // The held frame's payload segment still reads the region's bytes.
  REQUIRE(ha.held().size() == 1);
  const rte_mbuf* frame = ha.held()[0];
  REQUIRE(frame->nb_segs == 3);
  const uint8_t* payload = rte_pktmbuf_mtod(frame->next, const uint8_t*);
  CHECK(payload[0] == 0x6D);
  CHECK(payload[1023] == 0x6D);
  ha.release();  // the last frame frees the memory
}

}  // namespace uroce::test
