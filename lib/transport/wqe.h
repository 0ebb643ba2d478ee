// Send and receive work queue entries: a posted work request copied into
// the queue (verbs lets the caller reuse its WR and SGE memory at once), plus
// the progress the transport makes on it.
#pragma once

#include <infiniband/verbs.h>

#include <array>
#include <cstdint>

#include "uroce/wire/ip_addr.h"
#include "uroce/wire/eth.h"

namespace uroce::transport {

inline constexpr int kMaxSge = 32;
inline constexpr uint32_t kMaxInline = 512;

struct SgeList {
  std::array<ibv_sge, kMaxSge> sge{};
  int num = 0;
  uint64_t total = 0;  // bytes described
};

enum class WqeState : uint8_t {
  posted,      // requester has not started it
  in_progress, // some packets sent
  sent,        // every request packet sent; waiting for ACK or response
  failed,      // a local error stopped it; completes with `error` in order
  done,        // completed (CQE generated if signaled)
};

struct UdDest {
  wire::IpAddr gid;
  wire::IpAddr sgid;  // the address handle's sgid_index, resolved at post
  wire::MacAddr mac;
  uint8_t ttl = 64;   // its hop_limit
  uint8_t dscp = 0;   // its traffic_class >> 2
  uint32_t qpn = 0;
  uint32_t qkey = 0;
};

struct SendWqe {
  uint64_t wr_id = 0;
  ibv_wr_opcode opcode = IBV_WR_SEND;
  unsigned flags = 0;
  uint32_t imm = 0;  // host order of the wire word
  uint32_t invalidate_rkey = 0;
  uint64_t remote_addr = 0;
  uint32_t rkey = 0;
  uint64_t compare_add = 0;
  uint64_t swap = 0;
  UdDest ud;
  SgeList sgl;  // for inline sends, sgl.total is the inline length
  std::array<uint8_t, kMaxInline> inline_data{};
  uint64_t length = 0;  // message length

  // Progress.
  WqeState state = WqeState::posted;
  uint32_t first_psn = 0;
  uint32_t last_psn = 0;
  uint64_t read_received = 0;  // READ: response bytes placed so far
  bool signaled = false;
  bool rd_counted = false;    // holds one of the READ/ATOMIC credits
  ibv_wc_status error = IBV_WC_SUCCESS;  // local error found while sending
};

// READ and the atomics: they hold a READ/ATOMIC credit and complete only
// with their response.
inline bool is_rd_atomic(ibv_wr_opcode op) {
  return op == IBV_WR_RDMA_READ || op == IBV_WR_ATOMIC_CMP_AND_SWP || op == IBV_WR_ATOMIC_FETCH_AND_ADD;
}

struct RecvWqe {
  uint64_t wr_id = 0;
  SgeList sgl;
};

}  // namespace uroce::transport
