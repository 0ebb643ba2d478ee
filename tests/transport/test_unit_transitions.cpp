// SPDX-License-Identifier: BSD-3-Clause
// transition_allowed against the verbs QP state table (the kernel's
// qp_state_table in drivers/infiniband/core/verbs.c, RC and UD columns):
// every legal transition with exactly its required bits, each optional bit,
// and the illegal variants (a required bit missing, a bit outside
// required|optional, a from-state the table does not list).
#include <catch2/catch.hpp>

#include <vector>

#include "transport/qp_transitions.h"

using uroce::transport::transition_allowed;

namespace {

constexpr int S = IBV_QP_STATE;
constexpr int kAllBits[] = {
    IBV_QP_CUR_STATE, IBV_QP_EN_SQD_ASYNC_NOTIFY, IBV_QP_ACCESS_FLAGS, IBV_QP_PKEY_INDEX, IBV_QP_PORT,
    IBV_QP_QKEY,      IBV_QP_AV,                  IBV_QP_PATH_MTU,     IBV_QP_TIMEOUT,    IBV_QP_RETRY_CNT,
    IBV_QP_RNR_RETRY, IBV_QP_RQ_PSN,              IBV_QP_MAX_QP_RD_ATOMIC, IBV_QP_ALT_PATH, IBV_QP_MIN_RNR_TIMER,
    IBV_QP_SQ_PSN,    IBV_QP_MAX_DEST_RD_ATOMIC,  IBV_QP_PATH_MIG_STATE, IBV_QP_CAP,     IBV_QP_DEST_QPN};

struct Legal {
  ibv_qp_state from, to;
  int req, opt;  // attribute bits besides IBV_QP_STATE
};

// Written from the kernel table, independently of the implementation.
std::vector<Legal> rc_table() {
  const int rtr_req = IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
                      IBV_QP_MIN_RNR_TIMER;
  const int rts_req = IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC;
  const int to_rts_opt =
      IBV_QP_CUR_STATE | IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_MIN_RNR_TIMER | IBV_QP_PATH_MIG_STATE;
  const int sqd_opt = IBV_QP_PORT | IBV_QP_AV | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                      IBV_QP_MAX_QP_RD_ATOMIC | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS |
                      IBV_QP_PKEY_INDEX | IBV_QP_MIN_RNR_TIMER | IBV_QP_PATH_MIG_STATE;
  return {
      {IBV_QPS_RESET, IBV_QPS_INIT, IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS, 0},
      {IBV_QPS_INIT, IBV_QPS_INIT, 0, IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS},
      {IBV_QPS_INIT, IBV_QPS_RTR, rtr_req, IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX},
      {IBV_QPS_RTR, IBV_QPS_RTS, rts_req, to_rts_opt},
      {IBV_QPS_RTS, IBV_QPS_RTS, 0, to_rts_opt},
      {IBV_QPS_RTS, IBV_QPS_SQD, 0, IBV_QP_EN_SQD_ASYNC_NOTIFY},
      {IBV_QPS_SQD, IBV_QPS_RTS, 0, to_rts_opt},
      {IBV_QPS_SQD, IBV_QPS_SQD, 0, sqd_opt},
      {IBV_QPS_INIT, IBV_QPS_RESET, 0, 0}, {IBV_QPS_RTR, IBV_QPS_RESET, 0, 0}, {IBV_QPS_RTS, IBV_QPS_RESET, 0, 0},
      {IBV_QPS_SQD, IBV_QPS_RESET, 0, 0},  {IBV_QPS_ERR, IBV_QPS_RESET, 0, 0}, {IBV_QPS_RESET, IBV_QPS_RESET, 0, 0},
      {IBV_QPS_INIT, IBV_QPS_ERR, 0, 0},   {IBV_QPS_RTR, IBV_QPS_ERR, 0, 0},   {IBV_QPS_RTS, IBV_QPS_ERR, 0, 0},
      {IBV_QPS_SQD, IBV_QPS_ERR, 0, 0},    {IBV_QPS_ERR, IBV_QPS_ERR, 0, 0},
  };
}

std::vector<Legal> ud_table() {
  return {
      {IBV_QPS_RESET, IBV_QPS_INIT, IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY, 0},
      {IBV_QPS_INIT, IBV_QPS_INIT, 0, IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY},
      {IBV_QPS_INIT, IBV_QPS_RTR, 0, IBV_QP_PKEY_INDEX | IBV_QP_QKEY},
      {IBV_QPS_RTR, IBV_QPS_RTS, IBV_QP_SQ_PSN, IBV_QP_CUR_STATE | IBV_QP_QKEY},
      {IBV_QPS_RTS, IBV_QPS_RTS, 0, IBV_QP_CUR_STATE | IBV_QP_QKEY},
      {IBV_QPS_RTS, IBV_QPS_SQD, 0, IBV_QP_EN_SQD_ASYNC_NOTIFY},
      {IBV_QPS_SQD, IBV_QPS_RTS, 0, IBV_QP_CUR_STATE | IBV_QP_QKEY},
      {IBV_QPS_SQD, IBV_QPS_SQD, 0, IBV_QP_PKEY_INDEX | IBV_QP_QKEY},
      {IBV_QPS_SQE, IBV_QPS_RTS, 0, IBV_QP_CUR_STATE | IBV_QP_QKEY},
      {IBV_QPS_INIT, IBV_QPS_RESET, 0, 0}, {IBV_QPS_RTS, IBV_QPS_RESET, 0, 0}, {IBV_QPS_SQE, IBV_QPS_RESET, 0, 0},
      {IBV_QPS_RTR, IBV_QPS_ERR, 0, 0},    {IBV_QPS_SQE, IBV_QPS_ERR, 0, 0},
  };
}

const char* name(ibv_qp_state s) {
  switch (s) {
    case IBV_QPS_RESET: return "RESET";
    case IBV_QPS_INIT: return "INIT";
    case IBV_QPS_RTR: return "RTR";
    case IBV_QPS_RTS: return "RTS";
    case IBV_QPS_SQD: return "SQD";
    case IBV_QPS_SQE: return "SQE";
    case IBV_QPS_ERR: return "ERR";
    default: return "?";
  }
}

void check_legal(ibv_qp_type type, const Legal& t) {
  INFO((type == IBV_QPT_RC ? "RC " : "UD ") << name(t.from) << " -> " << name(t.to));
  CHECK(transition_allowed(type, t.from, t.to, S | t.req));
  CHECK(transition_allowed(type, t.from, t.to, S | t.req | t.opt));
  for (int bit : kAllBits) {
    INFO("bit 0x" << std::hex << bit);
    if (t.req & bit) {
      CHECK_FALSE(transition_allowed(type, t.from, t.to, S | (t.req & ~bit)));  // required bit missing
      CHECK_FALSE(transition_allowed(type, t.from, t.to, S | (t.req & ~bit) | t.opt));
    } else if (t.opt & bit) {
      CHECK(transition_allowed(type, t.from, t.to, S | t.req | bit));
    } else {
      CHECK_FALSE(transition_allowed(type, t.from, t.to, S | t.req | bit));  // extra bit
    }
  }
  // A real transition needs IBV_QP_STATE.
  if (t.from != t.to) CHECK_FALSE(transition_allowed(type, t.from, t.to, t.req | t.opt));
}

}  // namespace

TEST_CASE("Every legal RC transition, with each required bit missing and each foreign bit added", "[units]") {
  for (const Legal& t : rc_table()) check_legal(IBV_QPT_RC, t);
}

TEST_CASE("Every legal UD transition, with each required bit missing and each foreign bit added", "[units]") {
  for (const Legal& t : ud_table()) check_legal(IBV_QPT_UD, t);
}

TEST_CASE("Same-state modifies need no IBV_QP_STATE bit", "[units]") {
  CHECK(transition_allowed(IBV_QPT_RC, IBV_QPS_RTS, IBV_QPS_RTS, IBV_QP_MIN_RNR_TIMER));
  CHECK(transition_allowed(IBV_QPT_RC, IBV_QPS_INIT, IBV_QPS_INIT, IBV_QP_ACCESS_FLAGS));
  CHECK(transition_allowed(IBV_QPT_UD, IBV_QPS_RTS, IBV_QPS_RTS, IBV_QP_QKEY));
  CHECK_FALSE(transition_allowed(IBV_QPT_RC, IBV_QPS_RTS, IBV_QPS_RTS, IBV_QP_PATH_MTU));
}

TEST_CASE("Transitions the table does not list are refused whatever the mask", "[units]") {
  struct Pair {
    ibv_qp_state from, to;
  };
  const Pair illegal[] = {
      {IBV_QPS_RESET, IBV_QPS_RTR}, {IBV_QPS_RESET, IBV_QPS_RTS}, {IBV_QPS_RESET, IBV_QPS_SQD},
      {IBV_QPS_INIT, IBV_QPS_RTS},  {IBV_QPS_INIT, IBV_QPS_SQD},  {IBV_QPS_RTR, IBV_QPS_INIT},
      {IBV_QPS_RTR, IBV_QPS_RTR},   {IBV_QPS_RTR, IBV_QPS_SQD},   {IBV_QPS_RTS, IBV_QPS_INIT},
      {IBV_QPS_RTS, IBV_QPS_RTR},   {IBV_QPS_SQD, IBV_QPS_INIT},  {IBV_QPS_SQD, IBV_QPS_RTR},
      {IBV_QPS_ERR, IBV_QPS_INIT},  {IBV_QPS_ERR, IBV_QPS_RTR},   {IBV_QPS_ERR, IBV_QPS_RTS},
      {IBV_QPS_ERR, IBV_QPS_SQD},   {IBV_QPS_RTS, IBV_QPS_SQE},   {IBV_QPS_INIT, IBV_QPS_SQE},
  };
  int all = S;
  for (int bit : kAllBits) all |= bit;
  for (ibv_qp_type type : {IBV_QPT_RC, IBV_QPT_UD}) {
    for (const Pair& p : illegal) {
      INFO((type == IBV_QPT_RC ? "RC " : "UD ") << name(p.from) << " -> " << name(p.to));
      CHECK_FALSE(transition_allowed(type, p.from, p.to, S));
      CHECK_FALSE(transition_allowed(type, p.from, p.to, all));
      // The masks of the legal steps do not open an illegal one.
      for (const Legal& t : type == IBV_QPT_RC ? rc_table() : ud_table())
        CHECK_FALSE(transition_allowed(type, p.from, p.to, S | t.req));
    }
  }
  // SQE -> RTS exists for UD only (an RC QP never enters SQE).
  CHECK_FALSE(transition_allowed(IBV_QPT_RC, IBV_QPS_SQE, IBV_QPS_RTS, S));
  CHECK_FALSE(transition_allowed(IBV_QPT_RC, IBV_QPS_SQE, IBV_QPS_RTS, S | IBV_QP_CUR_STATE));
}

TEST_CASE("RC-only attributes are refused on UD, UD-only ones on RC", "[units]") {
  const int rc_rtr = IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
                     IBV_QP_MIN_RNR_TIMER;
  // UD RESET->INIT with RC's access flags instead of the Q_Key.
  CHECK_FALSE(transition_allowed(IBV_QPT_UD, IBV_QPS_RESET, IBV_QPS_INIT,
                                 S | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS));
  CHECK_FALSE(transition_allowed(IBV_QPT_UD, IBV_QPS_RESET, IBV_QPS_INIT,
                                 S | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY | IBV_QP_ACCESS_FLAGS));
  CHECK_FALSE(transition_allowed(IBV_QPT_UD, IBV_QPS_INIT, IBV_QPS_RTR, S | rc_rtr));
  CHECK_FALSE(transition_allowed(IBV_QPT_UD, IBV_QPS_INIT, IBV_QPS_RTR, S | IBV_QP_PATH_MTU));
  CHECK_FALSE(transition_allowed(IBV_QPT_UD, IBV_QPS_INIT, IBV_QPS_RTR, S | IBV_QP_AV));
  CHECK_FALSE(transition_allowed(IBV_QPT_UD, IBV_QPS_RTR, IBV_QPS_RTS, S | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT));
  CHECK_FALSE(transition_allowed(IBV_QPT_UD, IBV_QPS_RTR, IBV_QPS_RTS, S | IBV_QP_SQ_PSN | IBV_QP_RETRY_CNT));
  CHECK_FALSE(transition_allowed(IBV_QPT_UD, IBV_QPS_RTS, IBV_QPS_RTS, IBV_QP_MIN_RNR_TIMER));
  // RC RESET->INIT with UD's Q_Key.
  CHECK_FALSE(transition_allowed(IBV_QPT_RC, IBV_QPS_RESET, IBV_QPS_INIT,
                                 S | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY));
  CHECK_FALSE(transition_allowed(IBV_QPT_RC, IBV_QPS_RTR, IBV_QPS_RTS,
                                 S | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                                     IBV_QP_MAX_QP_RD_ATOMIC | IBV_QP_QKEY));
}
