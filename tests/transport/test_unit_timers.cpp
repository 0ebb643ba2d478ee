// SPDX-License-Identifier: BSD-3-Clause
// Timer values: local ACK timeout (IBA 9.7.6.1.3: 4.096 us * 2^timeout,
// 0 = infinite) and the RNR NAK timer table (IBA table 45 / rxe rnrnak_usec).
#include <catch2/catch.hpp>

#include "transport/transport.h"

using namespace uroce;
using namespace uroce::transport;

TEST_CASE("ack_timeout_ns is 4.096 us * 2^t and 0 means never", "[units]") {
  CHECK(ack_timeout_ns(0) == kNever);
  CHECK(ack_timeout_ns(1) == 8192);
  CHECK(ack_timeout_ns(5) == 131072);
  CHECK(ack_timeout_ns(10) == 4194304);
  CHECK(ack_timeout_ns(14) == 67108864);  // perftest default, ~67 ms
  CHECK(ack_timeout_ns(31) == 4096ull * (1ull << 31));
  for (uint8_t t = 1; t < 31; ++t) {
    INFO("timeout " << int(t));
    CHECK(ack_timeout_ns(uint8_t(t + 1)) == 2 * ack_timeout_ns(t));
  }
}

TEST_CASE("rnr_timer_ns follows the IBA RNR NAK timer table", "[units]") {
  // Microseconds, codes 0..31 (code 0 is the longest, 655.36 ms).
  static constexpr uint64_t kUs[32] = {655360, 10,    20,    30,    40,    60,     80,     120,
                                       160,    240,   320,   480,   640,   960,    1280,   1920,
                                       2560,   3840,  5120,  7680,  10240, 15360,  20480,  30720,
                                       40960,  61440, 81920, 122880, 163840, 245760, 327680, 491520};
  for (uint8_t c = 0; c < 32; ++c) {
    INFO("code " << int(c));
    CHECK(rnr_timer_ns(c) == kUs[c] * 1000);
  }
  CHECK(rnr_timer_ns(1) == 10'000);
  CHECK(rnr_timer_ns(16) == 2'560'000);
  CHECK(rnr_timer_ns(31) == 491'520'000);
  CHECK(rnr_timer_ns(0) == 655'360'000);
}

TEST_CASE("mtu_bytes maps the ibv_mtu enum", "[units]") {
  CHECK(mtu_bytes(IBV_MTU_256) == 256);
  CHECK(mtu_bytes(IBV_MTU_512) == 512);
  CHECK(mtu_bytes(IBV_MTU_1024) == 1024);
  CHECK(mtu_bytes(IBV_MTU_2048) == 2048);
  CHECK(mtu_bytes(IBV_MTU_4096) == 4096);
  CHECK(mtu_bytes(ibv_mtu(0)) == 0);
  CHECK(mtu_bytes(ibv_mtu(6)) == 0);
}
