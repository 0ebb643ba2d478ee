// SPDX-License-Identifier: BSD-3-Clause
#include "model.h"

#include <cstring>
#include <sstream>
#include <stdexcept>

namespace uroce::test::model {
namespace {

using Memory = std::vector<uint8_t>;

std::vector<uint8_t> gather(const Memory& m, const Spans& spans) {
  std::vector<uint8_t> out;
  for (const Span& s : spans) out.insert(out.end(), m.begin() + long(s.off), m.begin() + long(s.off + s.len));
  return out;
}

// Fills the spans in order with `data` (receive or READ scatter lists).
void scatter(Memory& m, const Spans& spans, const uint8_t* data, uint64_t len) {
  uint64_t done = 0;
  for (const Span& s : spans) {
    if (done == len) break;
    const uint64_t n = std::min<uint64_t>(s.len, len - done);
    std::memcpy(m.data() + s.off, data + done, n);
    done += n;
  }
  if (done != len) throw std::logic_error("model: scatter list shorter than the data");
}

uint64_t load64(const Memory& m, uint64_t off) {
  uint64_t v;
  std::memcpy(&v, m.data() + off, 8);
  return v;
}

void store64(Memory& m, uint64_t off, uint64_t v) { std::memcpy(m.data() + off, &v, 8); }

uint64_t total(const Spans& spans) {
  uint64_t t = 0;
  for (const Span& s : spans) t += s.len;
  return t;
}

}  // namespace

bool is_send_family(ibv_wr_opcode op) {
  return op == IBV_WR_SEND || op == IBV_WR_SEND_WITH_IMM || op == IBV_WR_SEND_WITH_INV;
}

bool consumes_recv(ibv_wr_opcode op) { return is_send_family(op) || op == IBV_WR_RDMA_WRITE_WITH_IMM; }

bool is_atomic(ibv_wr_opcode op) { return op == IBV_WR_ATOMIC_CMP_AND_SWP || op == IBV_WR_ATOMIC_FETCH_AND_ADD; }

ibv_wc_opcode wc_opcode_for(ibv_wr_opcode op) {
  switch (op) {
    case IBV_WR_RDMA_WRITE:
    case IBV_WR_RDMA_WRITE_WITH_IMM: return IBV_WC_RDMA_WRITE;
    case IBV_WR_RDMA_READ: return IBV_WC_RDMA_READ;
    case IBV_WR_ATOMIC_CMP_AND_SWP: return IBV_WC_COMP_SWAP;
    case IBV_WR_ATOMIC_FETCH_AND_ADD: return IBV_WC_FETCH_ADD;
    default: return IBV_WC_SEND;
  }
}

const char* opcode_name(ibv_wr_opcode op) {
  switch (op) {
    case IBV_WR_SEND: return "SEND";
    case IBV_WR_SEND_WITH_IMM: return "SEND_WITH_IMM";
    case IBV_WR_SEND_WITH_INV: return "SEND_WITH_INV";
    case IBV_WR_RDMA_WRITE: return "WRITE";
    case IBV_WR_RDMA_WRITE_WITH_IMM: return "WRITE_WITH_IMM";
    case IBV_WR_RDMA_READ: return "READ";
    case IBV_WR_ATOMIC_CMP_AND_SWP: return "CMP_AND_SWP";
    case IBV_WR_ATOMIC_FETCH_AND_ADD: return "FETCH_AND_ADD";
    default: return "?";
  }
}

uint64_t Scenario::total_payload() const {
  uint64_t t = 0;
  for (const Endpoint& e : endpoints)
    for (const Op& op : e.ops) t += op.length;
  return t;
}

std::string Scenario::describe() const {
  std::ostringstream o;
  for (size_t i = 0; i < pairs.size(); ++i) {
    const PairConfig& p = pairs[i];
    o << "pair " << i << ": dev" << p.dev_a << "<->dev" << p.dev_b << " mtu " << (128 << p.mtu) << " timeout "
      << int(p.timeout) << " rd_atomic " << int(p.rd_atomic) << " psn " << std::hex << p.psn_a << "/" << p.psn_b
      << std::dec << (p.sig_all ? " sig_all" : "") << " ops " << endpoints[2 * i].ops.size() << "+"
      << endpoints[2 * i + 1].ops.size() << "\n";
  }
  return o.str();
}

Prediction predict(const Scenario& s, std::vector<std::vector<uint8_t>> memory) {
  Prediction p;
  p.send.resize(s.endpoints.size());
  p.recv.resize(s.endpoints.size());
  for (size_t ei = 0; ei < s.endpoints.size(); ++ei) {
    const Endpoint& e = s.endpoints[ei];
    const Endpoint& peer = s.endpoints[e.peer];
    Memory& local = memory[e.device];
    Memory& remote = memory[peer.device];
    size_t next_recv = 0;  // the peer's receives are consumed in posting order
    for (const Op& op : e.ops) {
      Wc wc;
      wc.wr_id = op.wr_id;
      wc.opcode = wc_opcode_for(op.opcode);
      if (consumes_recv(op.opcode)) {
        if (next_recv >= peer.recvs.size()) throw std::logic_error("model: no receive for a SEND");
        const Recv& r = peer.recvs[next_recv++];
        Wc rc;
        rc.wr_id = r.wr_id;
        rc.check_len = true;
        rc.byte_len = op.length;
        if (op.opcode == IBV_WR_RDMA_WRITE_WITH_IMM) {
          rc.opcode = IBV_WC_RECV_RDMA_WITH_IMM;
        } else {
          rc.opcode = IBV_WC_RECV;
          if (total(r.local) < op.length) throw std::logic_error("model: receive buffer too small");
          const auto data = gather(local, op.local);
          scatter(remote, r.local, data.data(), data.size());
        }
        if (op.opcode == IBV_WR_SEND_WITH_IMM || op.opcode == IBV_WR_RDMA_WRITE_WITH_IMM) {
          rc.wc_flags = IBV_WC_WITH_IMM;
          rc.imm_data = op.imm_data;
        }
        if (op.opcode == IBV_WR_SEND_WITH_INV) {
          rc.wc_flags = IBV_WC_WITH_INV;
          rc.invalidated_rkey = op.invalidate_rkey;
        }
        p.recv[e.peer].push_back(rc);
      }
      switch (op.opcode) {
        case IBV_WR_RDMA_WRITE:
        case IBV_WR_RDMA_WRITE_WITH_IMM: {
          const auto data = gather(local, op.local);
          if (!data.empty()) std::memcpy(remote.data() + op.remote_off, data.data(), data.size());
          break;
        }
        case IBV_WR_RDMA_READ:
          scatter(local, op.local, remote.data() + op.remote_off, op.length);
          wc.check_len = true;
          wc.byte_len = op.length;
          break;
        case IBV_WR_ATOMIC_CMP_AND_SWP:
        case IBV_WR_ATOMIC_FETCH_AND_ADD: {
          const uint64_t orig = load64(remote, op.remote_off);
          if (op.opcode == IBV_WR_ATOMIC_FETCH_AND_ADD)
            store64(remote, op.remote_off, orig + op.compare_add);
          else if (orig == op.compare_add)
            store64(remote, op.remote_off, op.swap);
          store64(local, op.local.at(0).off, orig);  // the original value, host order
          wc.check_len = true;
          wc.byte_len = 8;
          break;
        }
        default: break;
      }
      if (op.signaled) p.send[ei].push_back(wc);
    }
  }
  p.memory = std::move(memory);
  return p;
}

}  // namespace uroce::test::model
