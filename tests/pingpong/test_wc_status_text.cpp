// SPDX-License-Identifier: BSD-3-Clause
// Every tool prints a completion's status as rdma-core's ibv_wc_status_str
// words and the number. The words are data here (tests/data/PROVENANCE.md:
// rdma-core 44's ibv_wc_status_str, one per status), so a change of wording
// in either the helper or an installed libibverbs shows.
#include <catch2/catch.hpp>

#include <infiniband/verbs.h>

#include <string>

#include "app_support.h"

namespace {

// ibv_wc_status_str of rdma-core 44 (Debian 12's libibverbs1), by status.
const char* const kWords[] = {
    "success",
    "local length error",
    "local QP operation error",
    "local EE context operation error",
    "local protection error",
    "Work Request Flushed Error",
    "memory management operation error",
    "bad response error",
    "local access error",
    "remote invalid request error",
    "remote access error",
    "remote operation error",
    "transport retry counter exceeded",
    "RNR retry counter exceeded",
    "local RDD violation error",
    "remote invalid RD request",
    "aborted error",
    "invalid EE context number",
    "invalid EE context state",
    "fatal error",
    "response timeout error",
    "general error",
    "TM error",
    "TM software rendezvous",
};

}  // namespace

TEST_CASE("every status reads as ibv_wc_status_str's words and its number", "[wc-status]") {
  STATIC_REQUIRE(sizeof kWords / sizeof kWords[0] == IBV_WC_TM_RNDV_INCOMPLETE + 1);
  for (int s = IBV_WC_SUCCESS; s <= IBV_WC_TM_RNDV_INCOMPLETE; ++s) {
    INFO("status " << s);
    CHECK(uroce::app::wc_status_text(ibv_wc_status(s)) == std::string(kWords[s]) + " (" + std::to_string(s) + ")");
  }
  CHECK(uroce::app::wc_status_text(IBV_WC_RETRY_EXC_ERR) == "transport retry counter exceeded (12)");
}

TEST_CASE("a status past the enum still prints its number", "[wc-status]") {
  CHECK(uroce::app::wc_status_text(ibv_wc_status(99)) == "unknown (99)");
}
