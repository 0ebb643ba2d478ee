// SPDX-License-Identifier: BSD-3-Clause
// 24-bit PSN arithmetic (IBA 9.7.1: modulo 2^24, a window of 2^23).
#include <catch2/catch.hpp>

#include "transport/psn.h"

using namespace uroce::transport;

TEST_CASE("psn_add wraps at 2^24", "[units]") {
  CHECK(psn_add(0xFFFFFF, 1) == 0);
  CHECK(psn_add(0xFFFFF0, 0x20) == 0x10);
  CHECK(psn_add(0, 0xFFFFFF) == 0xFFFFFF);
  CHECK(psn_add(0x123456, 0x1000000) == 0x123456);  // a full turn
  CHECK(psn_add(0x7FFFFF, 1) == 0x800000);
  CHECK(psn_add(5, 0) == 5);
}

TEST_CASE("psn_diff is the signed distance modulo 2^24", "[units]") {
  CHECK(psn_diff(0, 0xFFFFFF) == 1);
  CHECK(psn_diff(0xFFFFFF, 0) == -1);
  CHECK(psn_diff(0x10, 0xFFFFF0) == 0x20);
  CHECK(psn_diff(0xFFFFF0, 0x10) == -0x20);
  CHECK(psn_diff(42, 42) == 0);
  for (uint32_t base : {0u, 1u, 0x7FFFFFu, 0x800000u, 0xFFFFFFu, 0xABCDEFu}) {
    INFO("base " << base);
    // The window edge: 2^23 - 1 ahead is still ahead ...
    CHECK(psn_diff(psn_add(base, 0x7FFFFF), base) == 0x7FFFFF);
    CHECK(psn_diff(base, psn_add(base, 0x7FFFFF)) == -0x7FFFFF);
    // ... exactly 2^23 apart is the one ambiguous distance: [-2^23, 2^23).
    CHECK(psn_diff(psn_add(base, 0x800000), base) == -0x800000);
    // 2^23 + 1 ahead reads as 2^23 - 1 behind.
    CHECK(psn_diff(psn_add(base, 0x800001), base) == -0x7FFFFF);
  }
}

TEST_CASE("psn_lt / psn_le order PSNs within half the space", "[units]") {
  CHECK(psn_lt(0xFFFFFF, 0));
  CHECK_FALSE(psn_lt(0, 0xFFFFFF));
  CHECK(psn_lt(0xFFFFF0, 0x10));
  CHECK_FALSE(psn_lt(7, 7));
  CHECK(psn_le(7, 7));
  CHECK(psn_le(0xFFFFFF, 0));
  CHECK_FALSE(psn_le(0, 0xFFFFFF));
  for (uint32_t base : {0u, 0x400000u, 0xFFFFFEu}) {
    INFO("base " << base);
    CHECK(psn_lt(base, psn_add(base, 1)));
    CHECK(psn_lt(base, psn_add(base, 0x7FFFFF)));
    CHECK_FALSE(psn_lt(psn_add(base, 0x7FFFFF), base));
    // Beyond the window the order flips: base + 2^23 + 1 is "before" base.
    CHECK(psn_lt(psn_add(base, 0x800001), base));
    CHECK_FALSE(psn_lt(base, psn_add(base, 0x800001)));
  }
}
