// SPDX-License-Identifier: BSD-3-Clause
// The verbs QP state transition table: for each (from, to) pair, the
// attribute mask bits that must and may be given, for RC, UD and UC.
// Follows the kernel's qp_state_table (drivers/infiniband/core/verbs.c).
#include "qp_transitions.h"

namespace uroce::transport {
namespace {

constexpr int S = IBV_QP_STATE;
constexpr int PKEY = IBV_QP_PKEY_INDEX, PORT = IBV_QP_PORT, ACC = IBV_QP_ACCESS_FLAGS, QKEY = IBV_QP_QKEY;
constexpr int CUR = IBV_QP_CUR_STATE, ALT = IBV_QP_ALT_PATH, MIG = IBV_QP_PATH_MIG_STATE;
constexpr int RNRT = IBV_QP_MIN_RNR_TIMER;
constexpr int RC_RTR_REQ = IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                           IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
constexpr int UC_RTR_REQ = IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
constexpr int RC_RTS_REQ =
    IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
constexpr int RC_RTS_OPT = CUR | ALT | ACC | RNRT | MIG;
constexpr int RC_SQD_OPT = IBV_QP_AV | ALT | ACC | PKEY | RNRT | MIG | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                           IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC | IBV_QP_MAX_DEST_RD_ATOMIC | PORT;

constexpr int UC_RTS_OPT = CUR | ALT | ACC | MIG;

// Columns: RC required, RC optional, UD required, UD optional, UC required,
// UC optional. UC is RC without what only acknowledgements need (timeout,
// retries, RNR timer, READ/atomic credits).
constexpr Transition kTable[] = {
    {IBV_QPS_RESET, IBV_QPS_INIT, S | PKEY | PORT | ACC, 0, S | PKEY | PORT | QKEY, 0, S | PKEY | PORT | ACC, 0},
    {IBV_QPS_INIT, IBV_QPS_INIT, 0, PKEY | PORT | ACC, 0, PKEY | PORT | QKEY, 0, PKEY | PORT | ACC},
    {IBV_QPS_INIT, IBV_QPS_RTR, S | RC_RTR_REQ, ALT | ACC | PKEY, S, PKEY | QKEY, S | UC_RTR_REQ, ALT | ACC | PKEY},
    {IBV_QPS_RTR, IBV_QPS_RTS, S | RC_RTS_REQ, RC_RTS_OPT, S | IBV_QP_SQ_PSN, CUR | QKEY, S | IBV_QP_SQ_PSN,
     UC_RTS_OPT},
    {IBV_QPS_RTS, IBV_QPS_RTS, 0, CUR | ACC | ALT | MIG | RNRT, 0, CUR | QKEY, 0, UC_RTS_OPT},
    {IBV_QPS_RTS, IBV_QPS_SQD, S, IBV_QP_EN_SQD_ASYNC_NOTIFY, S, IBV_QP_EN_SQD_ASYNC_NOTIFY, S,
     IBV_QP_EN_SQD_ASYNC_NOTIFY},
    {IBV_QPS_SQD, IBV_QPS_RTS, S, RC_RTS_OPT, S, CUR | QKEY, S, UC_RTS_OPT},
    {IBV_QPS_SQD, IBV_QPS_SQD, 0, RC_SQD_OPT, 0, PKEY | QKEY, 0, IBV_QP_AV | ALT | ACC | PKEY | MIG},
    {IBV_QPS_SQE, IBV_QPS_RTS, -1, -1, S, CUR | QKEY, S, CUR | ACC},  // -1: not for RC
};

}  // namespace

bool transition_allowed(ibv_qp_type type, ibv_qp_state from, ibv_qp_state to, int mask) {
  const int given = mask & ~IBV_QP_STATE;
  // Into RESET or ERR from anywhere, with nothing but the state.
  if (to == IBV_QPS_RESET || to == IBV_QPS_ERR) return (mask & IBV_QP_STATE) && given == 0;
  const bool state_given = mask & IBV_QP_STATE;
  for (const Transition& t : kTable) {
    if (t.from != from || t.to != to) continue;
    const int req = type == IBV_QPT_RC ? t.rc_req : type == IBV_QPT_UC ? t.uc_req : t.ud_req;
    const int opt = type == IBV_QPT_RC ? t.rc_opt : type == IBV_QPT_UC ? t.uc_opt : t.ud_opt;
    if (req < 0) return false;
    const int req_attrs = req & ~IBV_QP_STATE;
    // A same-state modify needs no IBV_QP_STATE; a real transition does.
    if (from != to && !state_given) return false;
    return (given & req_attrs) == req_attrs && (given & ~(req_attrs | opt)) == 0;
  }
  return false;
}

}  // namespace uroce::transport
