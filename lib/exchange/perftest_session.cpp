// SPDX-License-Identifier: BSD-3-Clause
#include <bit>
#include <charconv>
#include <cstdio>
#include <cstring>

#include "uroce/exchange/perftest.h"
#include "uroce/exchange/channel.h"
#include "uroce/wire/byte_order.h"

namespace uroce::exchange {

namespace {

// atof() as perftest applies it to the peer's version: the longest
// leading decimal number, 0 if there is none.
double leading_number(const std::string& s) {
  size_t i = 0;
  while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
  double v = 0;
  auto r = std::from_chars(s.data() + i, s.data() + s.size(), v);
  return r.ec == std::errc() ? v : 0.0;
}

std::string to_hex(uint32_t v) {
  char b[16];
  std::snprintf(b, sizeof b, "%06x", v);
  return b;
}

}  // namespace

bool PerftestSession::swap(const void* mine, void* peer, size_t n, const char* step, std::string& error) {
  std::string why;
  // ctx_xchg_data_ethernet(): the client (servername set) writes first.
  bool ok = role_ == PerftestRole::kClient ? ch_.send(mine, n, why) && ch_.recv(peer, n, why)
                                           : ch_.recv(peer, n, why) && ch_.send(mine, n, why);
  if (!ok) error = std::string("perftest ") + step + ": " + why;
  return ok;
}

bool PerftestSession::exchange_versions(std::string& error) {
  // strncpy(user_param.version, VERSION, sizeof version): NUL-padded.
  char mine[kPerftestVersionSize] = {};
  std::memcpy(mine, kPerftestVersion, sizeof kPerftestVersion);
  char peer[kPerftestVersionSize];
  if (!swap(mine, peer, sizeof peer, "exchange_versions", error)) return false;

  const void* nul = std::memchr(peer, '\0', sizeof peer);
  if (!nul) {
    error = "perftest exchange_versions: the version field from " + ch_.peer() +
            " has no NUL in its 16 bytes; not a perftest peer?";
    return false;
  }
  std::string text(peer, size_t(static_cast<const char*>(nul) - peer));
  for (char c : text) {
    if (c < 0x20 || c > 0x7e) {
      error = "perftest exchange_versions: the version field from " + ch_.peer() +
              " is not printable text; not a perftest peer?";
      return false;
    }
  }
  peer_version_ = text;
  // check_version_compatibility(): perftest exits on atof(peer) < 5.70.
  if (leading_number(text) < kPerftestMinPeerVersion) {
    error = "perftest exchange_versions: peer " + ch_.peer() + " runs perftest version \"" + text +
            "\", older than 5.70, which perftest " + kPerftestVersion + " refuses (check_version_compatibility)";
    return false;
  }
  return true;
}

bool PerftestSession::exchange_sys_data(const PerftestSysData& mine, PerftestSysData& peer, std::string& error) {
  uint8_t out[4], in[4];
  wire::store_be32(out, uint32_t(mine.cycle_buffer));
  if (!swap(out, in, 4, "check_sys_data (cycle_buffer)", error)) return false;
  PerftestSysData got;
  got.cycle_buffer = int32_t(wire::load_be32(in));
  wire::store_be32(out, uint32_t(mine.cache_line_size));
  if (!swap(out, in, 4, "check_sys_data (cache_line_size)", error)) return false;
  got.cache_line_size = int32_t(wire::load_be32(in));
  peer = got;
  return true;
}

bool PerftestSession::exchange_mtu(int mine, int& peer, std::string& error) {
  // sprintf(cur, "%d", curr_mtu) sent as sizeof(char[2]): one digit + NUL.
  if (mine < 0 || mine > 9) {
    error = "perftest check_mtu: MTU enum " + std::to_string(mine) + " does not fit perftest's 2-byte field";
    return false;
  }
  char out[2] = {char('0' + mine), '\0'};
  char in[2];
  if (!swap(out, in, 2, "check_mtu", error)) return false;
  if (in[0] < '0' || in[0] > '9' || in[1] != '\0') {
    error = "perftest check_mtu: the MTU field from " + ch_.peer() + " is not one digit and a NUL";
    return false;
  }
  peer = in[0] - '0';
  return true;
}

int PerftestSession::agree_mtu(int mine, int peer) {
  bool valid = peer >= 1 && peer <= 5;  // valid_mtu_size(): IBV_MTU_256..IBV_MTU_4096
  return valid && mine > peer ? peer : mine;
}

bool PerftestSession::hand_shake(const PerftestDest& mine, PerftestDest& peer, std::string& error) {
  if (format_ == PerftestRecordFormat::kBinary) {
    PerftestBinaryRecord out, in;
    encode_perftest_dest_binary(mine, out);
    if (!swap(out.data(), in.data(), in.size(), "ctx_hand_shake", error)) return false;
    std::string why;
    if (!decode_perftest_dest_binary(in.data(), in.size(), peer, why))
      return error = "perftest ctx_hand_shake: from " + ch_.peer() + ": " + why, false;
    return true;
  }
  PerftestRecord out, in;
  if (!encode_perftest_dest(mine, out, error)) return false;
  if (!swap(out.data(), in.data(), in.size(), "ctx_hand_shake", error)) return false;
  std::string why;
  if (!decode_perftest_dest(in, peer, why)) {
    error = "perftest ctx_hand_shake: from " + ch_.peer() + ": " + why;
    return false;
  }
  return true;
}

bool PerftestSession::barrier(const PerftestDest& mine, std::string& error) {
  PerftestDest ignored;
  return hand_shake(mine, ignored, error);
}

bool PerftestSession::exchange_bw_reports(const PerftestBwReport& mine, bool per_port, PerftestBwReport& peer,
                                          std::string& error) {
  // Every field is its own ctx_xchg_data() of 8 bytes: hton_long for the
  // integers, bswap_double for the doubles (both big-endian on the wire).
  PerftestBwReport got;
  auto u = [&](uint64_t m, uint64_t& p, const char* step) {
    uint8_t out[8], in[8];
    wire::store_be64(out, m);
    if (!swap(out, in, 8, step, error)) return false;
    p = wire::load_be64(in);
    return true;
  };
  auto d = [&](double m, double& p, const char* step) {
    uint64_t bits = 0;
    if (!u(std::bit_cast<uint64_t>(m), bits, step)) return false;
    p = std::bit_cast<double>(bits);
    return true;
  };
  bool ok = u(mine.size, got.size, "xchg_bw_reports (size)") && u(mine.iters, got.iters, "xchg_bw_reports (iters)") &&
            d(mine.bw_peak, got.bw_peak, "xchg_bw_reports (bw_peak)") &&
            d(mine.bw_avg, got.bw_avg, "xchg_bw_reports (bw_avg)") &&
            d(mine.msg_rate_avg, got.msg_rate_avg, "xchg_bw_reports (msgRate_avg)");
  if (ok && per_port) {
    ok = d(mine.bw_avg_p1, got.bw_avg_p1, "xchg_bw_reports (bw_avg_p1)") &&
         d(mine.msg_rate_avg_p1, got.msg_rate_avg_p1, "xchg_bw_reports (msgRate_avg_p1)") &&
         d(mine.bw_avg_p2, got.bw_avg_p2, "xchg_bw_reports (bw_avg_p2)") &&
         d(mine.msg_rate_avg_p2, got.msg_rate_avg_p2, "xchg_bw_reports (msgRate_avg_p2)");
  }
  if (ok) peer = got;
  return ok;
}

bool PerftestSession::close(const PerftestDest& mine, std::string& error) {
  if (!barrier(mine, error)) return false;
  // Over rdma_cm (-R) perftest sends no "done": the QP record is the last step.
  if (format_ == PerftestRecordFormat::kBinary) return true;
  std::string why;
  // Both sides write "done" without reading first; perftest never reads
  // it. We read it so that closing does not reset the connection under a
  // peer that is still writing.
  if (!ch_.send(kPerftestDone, sizeof kPerftestDone, why)) {
    error = "perftest ctx_close_connection: " + why;
    return false;
  }
  char in[sizeof kPerftestDone];
  bool eof = false;
  if (!ch_.recv_or_eof(in, sizeof in, eof, why)) {
    error = "perftest ctx_close_connection: " + why;
    return false;
  }
  if (!eof && std::memcmp(in, kPerftestDone, sizeof in) != 0) {
    error = "perftest ctx_close_connection: expected \"done\\0\" from " + ch_.peer() + ", got other bytes";
    return false;
  }
  return true;
}

std::string perftest_qp_mismatch(const std::vector<PerftestDest>& first, const std::vector<PerftestDest>* again,
                                 size_t my_qps, const char* peer_role) {
  const std::string here = std::to_string(my_qps) + " QP" + (my_qps == 1 ? "" : "s");
  for (size_t i = 1; i < first.size(); ++i)
    for (size_t k = 0; k < i; ++k)
      if (first[i].qpn == first[k].qpn)
        return std::string("the ") + peer_role + " sent QP 0x" + to_hex(first[i].qpn) +
               " twice among its first records: it likely runs " + std::to_string(i) + " QP" +
               (i == 1 ? "" : "s") + " (-q), this side " + here + "; give both sides the same -q and test";
  if (again)
    for (size_t i = 0; i < again->size() && i < first.size(); ++i)
      if ((*again)[i].qpn != first[i].qpn || (*again)[i].psn != first[i].psn)
        return std::string("the ") + peer_role + "'s second round of QP records does not repeat its first: it likely runs more QPs (-q) than this side's " +
               here + "; give both sides the same -q and test";
  return "";
}

}  // namespace uroce::exchange
