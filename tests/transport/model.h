// SPDX-License-Identifier: BSD-3-Clause
// Reference model for the randomized property test: what a correct RC
// transport must produce for a scenario, worked out without any transport.
//
// A scenario is a set of connected RC QP pairs between devices, each device
// owning one registered region. Every QP endpoint has its own disjoint
// slices of its device's region, so the endpoints cannot disturb each
// other and the model may execute them one after another:
//   out    - gather source of its SENDs and WRITEs (never written)
//   in     - where its READ data and atomic results land
//   recv   - its receive buffers, one fresh slice per receive
//   target - what its peer WRITEs, READs and updates atomically
// Within an endpoint the model follows RC semantics (IBA 9.5, 10.8.3):
// requests execute at the responder in posting order, SENDs consume the
// responder's receives in posting order, completions are in posting order.
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>
#include <string>
#include <vector>

namespace uroce::test::model {

// Bytes [off, off + len) of a device's region.
struct Span {
  uint64_t off = 0;
  uint32_t len = 0;
};
using Spans = std::vector<Span>;

// One send work request, in region offsets rather than addresses.
struct Op {
  uint64_t wr_id = 0;
  ibv_wr_opcode opcode = IBV_WR_SEND;
  bool signaled = true;   // after sq_sig_all is applied
  bool inline_data = false;
  bool fence = false;
  bool solicited = false;
  Spans local;             // gather list (SEND/WRITE) or scatter list (READ, atomic)
  uint64_t remote_off = 0; // WRITE/READ/atomic: offset in the peer's region
  uint32_t length = 0;     // sum of local lengths
  uint64_t compare_add = 0;
  uint64_t swap = 0;
  uint32_t imm_data = 0;   // as posted (network order; the receiver sees the same value)
  uint32_t invalidate_rkey = 0;
};

struct Recv {
  uint64_t wr_id = 0;
  Spans local;
};

// Where an endpoint's slices are in its device's region.
struct Layout {
  uint64_t out = 0, in = 0, recv = 0, target = 0;
  uint64_t out_len = 0, in_len = 0, recv_len = 0, target_len = 0;
};

struct Endpoint {
  uint32_t device = 0;
  uint32_t peer = 0;       // index of the other endpoint of the pair
  uint32_t pair = 0;
  Layout layout;
  std::vector<Op> ops;     // posted in this order
  std::vector<Recv> recvs; // posted in this order; the peer's SENDs and WRITE_WITH_IMMs consume them
};

// Connection parameters of one QP pair.
struct PairConfig {
  uint32_t dev_a = 0, dev_b = 0;
  ibv_mtu mtu = IBV_MTU_1024;
  uint8_t timeout = 10;
  uint8_t min_rnr_timer = 1;
  uint8_t rd_atomic = 16;
  uint32_t psn_a = 0, psn_b = 0;  // initial send PSN of each side
  bool sig_all = false;
};

struct Scenario {
  uint64_t seed = 0;
  uint32_t devices = 3;
  std::vector<uint64_t> region_bytes;  // per device
  std::vector<PairConfig> pairs;       // pair i has endpoints 2i (on dev_a) and 2i+1 (on dev_b)
  std::vector<Endpoint> endpoints;

  uint64_t total_payload() const;
  std::string describe() const;  // one line per pair, for failure messages
};

// An expected completion. byte_len is compared only where verbs defines
// it for the opcode (receives, READ, atomics).
struct Wc {
  uint64_t wr_id = 0;
  ibv_wc_status status = IBV_WC_SUCCESS;
  ibv_wc_opcode opcode = IBV_WC_SEND;
  bool check_len = false;
  uint32_t byte_len = 0;
  unsigned wc_flags = 0;  // IBV_WC_WITH_IMM / IBV_WC_WITH_INV
  uint32_t imm_data = 0;
  uint32_t invalidated_rkey = 0;
};

struct Prediction {
  std::vector<std::vector<uint8_t>> memory;  // final bytes of every region
  std::vector<std::vector<Wc>> send;         // per endpoint, in order
  std::vector<std::vector<Wc>> recv;         // per endpoint, in order
};

// Executes the scenario on copies of the initial regions.
Prediction predict(const Scenario& s, std::vector<std::vector<uint8_t>> memory);

// verbs' completion opcode for a send opcode.
ibv_wc_opcode wc_opcode_for(ibv_wr_opcode op);
bool is_send_family(ibv_wr_opcode op);
bool consumes_recv(ibv_wr_opcode op);  // SEND family and WRITE_WITH_IMM
bool is_atomic(ibv_wr_opcode op);
const char* opcode_name(ibv_wr_opcode op);

}  // namespace uroce::test::model
