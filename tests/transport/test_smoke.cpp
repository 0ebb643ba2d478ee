#include "rc_pair.h"

using namespace uroce;
using namespace uroce::test;

TEST_CASE("RC SEND, WRITE and READ move bytes between two devices", "[smoke]") {
  RcPair p;
  for (size_t i = 0; i < 10000; ++i) p.a.buf()[i] = uint8_t(i * 13 + 7);
  REQUIRE(post_recv(p.b, 1, 0, 8192) == 0);
  REQUIRE(post_send(p.a, IBV_WR_SEND, 10, 0, 5000) == 0);
  auto wb = p.wait(p.b, 1);
  REQUIRE(wb.size() == 1);
  CHECK(wb[0].status == IBV_WC_SUCCESS);
  CHECK(wb[0].opcode == IBV_WC_RECV);
  CHECK(wb[0].byte_len == 5000);
  CHECK(std::memcmp(p.a.buf(), p.b.buf(), 5000) == 0);
  auto wa = p.wait(p.a, 1);
  REQUIRE(wa.size() == 1);
  CHECK(wa[0].wr_id == 10);
  CHECK(wa[0].status == IBV_WC_SUCCESS);

  REQUIRE(post_send(p.a, IBV_WR_RDMA_WRITE, 11, 0, 9000, p.b.addr(100000), p.b.mr->rkey()) == 0);
  wa = p.wait(p.a, 1);
  REQUIRE(wa.size() == 1);
  CHECK(wa[0].status == IBV_WC_SUCCESS);
  CHECK(std::memcmp(p.a.buf(), p.b.buf() + 100000, 9000) == 0);

  REQUIRE(post_send(p.a, IBV_WR_RDMA_READ, 12, 200000, 9000, p.b.addr(100000), p.b.mr->rkey()) == 0);
  wa = p.wait(p.a, 1);
  REQUIRE(wa.size() == 1);
  CHECK(wa[0].status == IBV_WC_SUCCESS);
  CHECK(wa[0].opcode == IBV_WC_RDMA_READ);
  CHECK(std::memcmp(p.a.buf(), p.a.buf() + 200000, 9000) == 0);
}
