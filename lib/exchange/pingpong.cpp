// SPDX-License-Identifier: BSD-3-Clause
#include "uroce/exchange/pingpong.h"

#include <cstdio>
#include <cstring>

#include "uroce/exchange/tcp_channel.h"

namespace uroce::exchange {
namespace {

constexpr const char* kLayout = "LLLL:QQQQQQ:PPPPPP:<32 hex GID digits>\\0";

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// "'x'" for printable characters, "0x07" otherwise: the byte may be binary
// (a perftest peer, a TLS client).
std::string show(char c) {
  char buf[8];
  if (c >= 0x20 && c < 0x7f) std::snprintf(buf, sizeof buf, "'%c'", c);
  else std::snprintf(buf, sizeof buf, "0x%02x", uint8_t(c));
  return buf;
}

struct Field {
  const char* name;
  size_t offset;
  size_t digits;
};

// The colons sit right after each numeric field.
constexpr Field kFields[] = {{"LID", 0, 4}, {"QPN", 5, 6}, {"PSN", 12, 6}, {"GID", 19, 32}};

bool bad(std::string& error, const std::string& what) {
  error = "malformed pingpong record (" + std::string(kLayout) + "): " + what;
  return false;
}

// The client's closing "done\0".
bool recv_done(TcpChannel& ch, std::string& error) {
  std::string why;
  char done[sizeof kPingpongDone];
  if (!ch.recv(done, sizeof done, why)) return error = "couldn't read \"done\" from " + ch.peer() + ": " + why, false;
  if (std::memcmp(done, kPingpongDone, sizeof done) != 0) {
    std::string shown;
    for (char c : done) shown += show(c) + " ";
    return error = "expected \"done\\0\" from " + ch.peer() + ", got " + shown.substr(0, shown.size() - 1), false;
  }
  return true;
}

// srq_pingpong's kSrqPingpongRecords records: one per QP, then zeros.
bool encode_all(const std::vector<PingpongDest>& mine, std::string& out, std::string& error) {
  if (mine.size() > kSrqPingpongRecords)
    return error = std::to_string(mine.size()) + " QPs: srq_pingpong exchanges at most " +
                   std::to_string(kSrqPingpongRecords), false;
  out.clear();
  PingpongRecord r;
  for (size_t i = 0; i < kSrqPingpongRecords; ++i) {
    if (!encode_pingpong(i < mine.size() ? mine[i] : PingpongDest{}, r, error))
      return error = "QP " + std::to_string(i) + ": " + error, false;
    out.append(r.data(), r.size());
  }
  return true;
}

bool recv_all(TcpChannel& ch, std::vector<PingpongDest>& remote, std::string& error) {
  std::string why;
  std::vector<PingpongDest> got(kSrqPingpongRecords);
  PingpongRecord r;
  for (size_t i = 0; i < kSrqPingpongRecords; ++i) {
    if (!ch.recv(r.data(), r.size(), why))
      return error = "couldn't read remote address " + std::to_string(i) + " of " +
                     std::to_string(kSrqPingpongRecords) + " from " + ch.peer() + ": " + why, false;
    if (!decode_pingpong(r, got[i], why))
      return error = "remote address " + std::to_string(i) + " from " + ch.peer() + ": " + why, false;
  }
  remote = std::move(got);
  return true;
}

}  // namespace

bool encode_pingpong(const PingpongDest& d, PingpongRecord& out, std::string& error) {
  if (d.lid > 0xFFFF) return error = "LID " + std::to_string(d.lid) + " does not fit 4 hex digits", false;
  if (d.qpn > 0xFFFFFF) return error = "QPN " + std::to_string(d.qpn) + " does not fit 6 hex digits", false;
  if (d.psn > 0xFFFFFF) return error = "PSN " + std::to_string(d.psn) + " does not fit 6 hex digits", false;
  char gid[33];
  for (size_t i = 0; i < 16; ++i) std::snprintf(gid + 2 * i, 3, "%02x", d.gid.bytes[i]);
  // 18 + 1 + 32 characters and the NUL: exactly the record.
  const int n = std::snprintf(out.data(), out.size(), "%04x:%06x:%06x:%s", unsigned(d.lid), unsigned(d.qpn),
                              unsigned(d.psn), gid);
  if (n != int(kPingpongRecordSize - 1)) return error = "internal: pingpong record of " + std::to_string(n) + " characters", false;
  return true;
}

bool decode_pingpong(const char* bytes, size_t len, PingpongDest& out, std::string& error) {
  if (len != kPingpongRecordSize)
    return bad(error, std::to_string(len) + " bytes, expected " + std::to_string(kPingpongRecordSize));
  PingpongDest d;
  uint32_t* numeric[] = {&d.lid, &d.qpn, &d.psn};
  for (size_t f = 0; f < 4; ++f) {
    const Field& fd = kFields[f];
    for (size_t i = 0; i < fd.digits; ++i) {
      const size_t at = fd.offset + i;
      const int v = hex_value(bytes[at]);
      if (v < 0)
        return bad(error, "byte " + std::to_string(at) + " is " + show(bytes[at]) + ", expected a hex digit of the " +
                              fd.name);
      if (f < 3) *numeric[f] = *numeric[f] << 4 | uint32_t(v);
      else d.gid.bytes[i / 2] = uint8_t(d.gid.bytes[i / 2] << 4 | v);
    }
    const size_t end = fd.offset + fd.digits;
    const char want = f < 3 ? ':' : '\0';
    if (bytes[end] != want)
      return bad(error, "byte " + std::to_string(end) + " is " + show(bytes[end]) + ", expected " +
                            (f < 3 ? "':' after the " + std::string(fd.name) : std::string("the terminating NUL")));
  }
  out = d;
  return true;
}

bool pingpong_client_exchange(TcpChannel& ch, const PingpongDest& mine, PingpongDest& remote, std::string& error) {
  PingpongRecord msg;
  std::string why;
  if (!encode_pingpong(mine, msg, why)) return error = "local address: " + why, false;
  if (!ch.send(msg.data(), msg.size(), why))
    return error = "couldn't send the local address to " + ch.peer() + ": " + why, false;
  if (!ch.recv(msg.data(), msg.size(), why))
    return error = "couldn't read the remote address from " + ch.peer() + ": " + why, false;
  if (!decode_pingpong(msg, remote, why)) return error = "remote address from " + ch.peer() + ": " + why, false;
  if (!ch.send(kPingpongDone, sizeof kPingpongDone, why))
    return error = "couldn't send \"done\" to " + ch.peer() + ": " + why, false;
  return true;
}

bool pingpong_server_exchange(TcpChannel& ch, const PingpongDest& mine, const PingpongConnect& connect,
                              PingpongDest& remote, std::string& error) {
  PingpongRecord msg;
  std::string why;
  // Encode first: a local problem should not leave the client waiting.
  PingpongRecord reply;
  if (!encode_pingpong(mine, reply, why)) return error = "local address: " + why, false;
  if (!ch.recv(msg.data(), msg.size(), why))
    return error = "couldn't read the remote address from " + ch.peer() + ": " + why, false;
  PingpongDest got;
  if (!decode_pingpong(msg, got, why)) return error = "remote address from " + ch.peer() + ": " + why, false;
  if (connect && !connect(got, why)) return error = "couldn't connect to the remote QP: " + why, false;
  if (!ch.send(reply.data(), reply.size(), why))
    return error = "couldn't send the local address to " + ch.peer() + ": " + why, false;
  if (!recv_done(ch, error)) return false;
  remote = got;
  return true;
}

bool srq_pingpong_client_exchange(TcpChannel& ch, const std::vector<PingpongDest>& mine,
                                  std::vector<PingpongDest>& remote, std::string& error) {
  std::string msg, why;
  if (!encode_all(mine, msg, why)) return error = "local addresses: " + why, false;
  if (!ch.send(msg.data(), msg.size(), why))
    return error = "couldn't send the local addresses to " + ch.peer() + ": " + why, false;
  if (!recv_all(ch, remote, error)) return false;
  if (!ch.send(kPingpongDone, sizeof kPingpongDone, why))
    return error = "couldn't send \"done\" to " + ch.peer() + ": " + why, false;
  return true;
}

bool srq_pingpong_server_exchange(TcpChannel& ch, const std::vector<PingpongDest>& mine,
                                  const PingpongConnectAll& connect, std::vector<PingpongDest>& remote,
                                  std::string& error) {
  std::string reply, why;
  if (!encode_all(mine, reply, why)) return error = "local addresses: " + why, false;
  std::vector<PingpongDest> got;
  if (!recv_all(ch, got, error)) return false;
  if (connect && !connect(got, why)) return error = "couldn't connect to the remote QPs: " + why, false;
  if (!ch.send(reply.data(), reply.size(), why))
    return error = "couldn't send the local addresses to " + ch.peer() + ": " + why, false;
  if (!recv_done(ch, error)) return false;
  remote = std::move(got);
  return true;
}

}  // namespace uroce::exchange
