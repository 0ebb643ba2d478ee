// SPDX-License-Identifier: BSD-3-Clause
// The out-of-band exchange of rdma-core's ibv_rc_pingpong (and its
// ud/srq/xsrc siblings): one 52-byte text record per QP,
//
//   "LLLL:QQQQQQ:PPPPPP:GGGGGGGGGGGGGGGGGGGGGGGGGGGGGGGG\0"
//
// = printf("%04x:%06x:%06x:%s") of LID, QPN, PSN and the 16 GID bytes as 32
// hex digits in wire (network) order, NUL-terminated; the buffer is
// `sizeof "0000:000000:000000:00000000000000000000000000000000"`. The
// conversation (pp_client_exch_dest / pp_server_exch_dest in
// libibverbs/examples/rc_pingpong.c):
//
//   client -> server   client's record
//   server             connects its QP to the client (RTR/RTS)
//   server -> client   server's record
//   client -> server   "done\0"
//
// The server connects between reading and replying because the client
// starts sending as soon as it has the reply.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "uroce/wire/ip_addr.h"

namespace uroce::exchange {

class TcpChannel;

struct PingpongDest {
  uint32_t lid = 0;  // 16 bits; 0 on RoCE
  uint32_t qpn = 0;  // 24 bits
  uint32_t psn = 0;  // 24 bits
  wire::IpAddr gid;

  bool operator==(const PingpongDest&) const = default;
};

inline constexpr size_t kPingpongRecordSize = sizeof "0000:000000:000000:00000000000000000000000000000000";
static_assert(kPingpongRecordSize == 52);
using PingpongRecord = std::array<char, kPingpongRecordSize>;

// What the client sends last, NUL included (5 bytes).
inline constexpr char kPingpongDone[] = "done";

// The record of `d` in rc_pingpong's format (lowercase hex). false and a
// message if a field does not fit its width (LID > 0xffff, QPN or PSN >
// 0xffffff): rc_pingpong would print more digits and break the framing.
bool encode_pingpong(const PingpongDest& d, PingpongRecord& out, std::string& error);

// Strict parse of one record: exactly 4, 6, 6 and 32 hex digits (either
// case) separated by ':' and followed by NUL. rc_pingpong's sscanf would
// take less; anything else here means the peer is not speaking this
// protocol (perftest, a different tool, a stray connection), and the
// message says which byte is wrong and what was expected.
bool decode_pingpong(const char* bytes, size_t len, PingpongDest& out, std::string& error);
inline bool decode_pingpong(const PingpongRecord& r, PingpongDest& out, std::string& error) {
  return decode_pingpong(r.data(), r.size(), out, error);
}

// Client side: sends `mine`, receives the server's record into `remote`,
// sends "done\0". false and a message naming the step and the peer.
bool pingpong_client_exchange(TcpChannel& ch, const PingpongDest& mine, PingpongDest& remote,
                              std::string& error);

// Called by the server between reading the client's record and replying:
// connect the QP to `remote`. false (and a message) aborts the exchange
// without replying, as rc_pingpong does.
using PingpongConnect = std::function<bool(const PingpongDest& remote, std::string& error)>;

// Server side: receives the client's record into `remote`, calls
// `connect`, sends `mine`, receives "done\0".
bool pingpong_server_exchange(TcpChannel& ch, const PingpongDest& mine, const PingpongConnect& connect,
                              PingpongDest& remote, std::string& error);

// ibv_srq_pingpong's variant (libibverbs/examples/srq_pingpong.c): the
// same record, but always kSrqPingpongRecords of them each way (its
// MAX_QP), one per QP in QP order and all-zero records after the last QP:
//
//   client -> server   256 records
//   server             connects its QPs (RTR/RTS)
//   server -> client   256 records
//   client -> server   "done\0"
inline constexpr size_t kSrqPingpongRecords = 256;

// `mine` holds one record per QP (at most kSrqPingpongRecords); `remote`
// gets all kSrqPingpongRecords the peer sent, zero records included (the
// caller knows how many QPs it has; the protocol does not say).
bool srq_pingpong_client_exchange(TcpChannel& ch, const std::vector<PingpongDest>& mine,
                                  std::vector<PingpongDest>& remote, std::string& error);

using PingpongConnectAll = std::function<bool(const std::vector<PingpongDest>& remote, std::string& error)>;

bool srq_pingpong_server_exchange(TcpChannel& ch, const std::vector<PingpongDest>& mine,
                                  const PingpongConnectAll& connect, std::vector<PingpongDest>& remote,
                                  std::string& error);

}  // namespace uroce::exchange
