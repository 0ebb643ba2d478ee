// SPDX-License-Identifier: BSD-3-Clause
#include "model_check.h"

#include <cstring>
#include <map>
#include <sstream>

namespace uroce::test::model {
namespace {

constexpr unsigned kFlagMask = IBV_WC_WITH_IMM | IBV_WC_WITH_INV;

std::string hex(uint64_t v) {
  std::ostringstream o;
  o << "0x" << std::hex << v;
  return o.str();
}

// Which slice of which endpoint holds byte `off` of `device`'s region.
std::string locate(const Scenario& s, uint32_t device, uint64_t off) {
  for (size_t ei = 0; ei < s.endpoints.size(); ++ei) {
    const Endpoint& e = s.endpoints[ei];
    if (e.device != device) continue;
    const Layout& l = e.layout;
    const struct {
      const char* name;
      uint64_t at, len;
    } areas[] = {{"out", l.out, l.out_len}, {"in", l.in, l.in_len}, {"recv", l.recv, l.recv_len},
                 {"target", l.target, l.target_len}};
    for (const auto& a : areas)
      if (off >= a.at && off < a.at + a.len)
        return "endpoint " + std::to_string(ei) + " (pair " + std::to_string(e.pair) + ") " + a.name + "+" +
               std::to_string(off - a.at);
  }
  return "unassigned byte " + std::to_string(off);
}

}  // namespace

std::string to_string(const ibv_wc& wc) {
  std::ostringstream o;
  o << "{wr_id " << hex(wc.wr_id) << " status " << int(wc.status) << " opcode " << int(wc.opcode) << " byte_len "
    << wc.byte_len << " flags " << hex(wc.wc_flags);
  if (wc.wc_flags & IBV_WC_WITH_IMM) o << " imm " << hex(wc.imm_data);
  if (wc.wc_flags & IBV_WC_WITH_INV) o << " inv " << hex(wc.invalidated_rkey);
  o << " qp " << hex(wc.qp_num) << "}";
  return o.str();
}

std::string to_string(const Wc& wc) {
  std::ostringstream o;
  o << "{wr_id " << hex(wc.wr_id) << " status " << int(wc.status) << " opcode " << int(wc.opcode);
  if (wc.check_len) o << " byte_len " << wc.byte_len;
  o << " flags " << hex(wc.wc_flags);
  if (wc.wc_flags & IBV_WC_WITH_IMM) o << " imm " << hex(wc.imm_data);
  if (wc.wc_flags & IBV_WC_WITH_INV) o << " inv " << hex(wc.invalidated_rkey);
  o << "}";
  return o.str();
}

void compare_completions(const std::string& what, const std::vector<Wc>& expected, const std::vector<ibv_wc>& got,
                         bool receive, uint32_t peer_qpn, std::vector<std::string>& findings) {
  if (got.size() != expected.size())
    findings.push_back(what + ": " + std::to_string(got.size()) + " completions, model expects " +
                       std::to_string(expected.size()));
  const size_t n = std::min(got.size(), expected.size());
  for (size_t i = 0; i < n; ++i) {
    const Wc& e = expected[i];
    const ibv_wc& g = got[i];
    bool ok = g.wr_id == e.wr_id && g.status == e.status && g.opcode == e.opcode;
    if (e.check_len) ok = ok && g.byte_len == e.byte_len;
    if (receive) {
      ok = ok && (g.wc_flags & kFlagMask) == e.wc_flags;
      if (e.wc_flags & IBV_WC_WITH_IMM) ok = ok && g.imm_data == e.imm_data;
      if (e.wc_flags & IBV_WC_WITH_INV) ok = ok && g.invalidated_rkey == e.invalidated_rkey;
      if (peer_qpn) ok = ok && g.src_qp == peer_qpn;
    }
    if (!ok) {
      findings.push_back(what + " completion #" + std::to_string(i) + ": got " + to_string(g) + ", expected " +
                         to_string(e));
      return;  // the rest is usually shifted by one; the first difference says it
    }
  }
  // Extra or missing entries after an otherwise identical prefix.
  for (size_t i = n; i < got.size() && i < n + 3; ++i)
    findings.push_back(what + " unexpected completion #" + std::to_string(i) + ": " + to_string(got[i]));
  for (size_t i = n; i < expected.size() && i < n + 3; ++i)
    findings.push_back(what + " missing completion #" + std::to_string(i) + ": " + to_string(expected[i]));
}

void compare_memory(const Scenario& s, uint32_t device, const std::vector<uint8_t>& expected, const uint8_t* got,
                    std::vector<std::string>& findings) {
  if (std::memcmp(expected.data(), got, expected.size()) == 0) return;
  // Runs of differing bytes, reported per run (first few only).
  size_t runs = 0, bytes = 0;
  for (size_t i = 0; i < expected.size(); ++i) {
    if (expected[i] == got[i]) continue;
    size_t j = i;
    while (j < expected.size() && expected[j] != got[j]) ++j;
    bytes += j - i;
    if (runs++ < 4)
      findings.push_back("device " + std::to_string(device) + " memory differs at " + locate(s, device, i) + ", " +
                         std::to_string(j - i) + " byte(s): got " + hex(got[i]) + ", model " + hex(expected[i]));
    i = j;
  }
  findings.push_back("device " + std::to_string(device) + ": " + std::to_string(bytes) + " byte(s) differ in " +
                     std::to_string(runs) + " run(s)");
}

}  // namespace uroce::test::model
