// SPDX-License-Identifier: BSD-3-Clause
// perftest's out-of-band TCP conversation (ib_write_bw, ib_read_lat, ...),
// as perftest 4.5 (it announces itself as "6.06") speaks it. Every step is
// a ctx_xchg_data()-style swap: the client writes its bytes, then reads
// the server's; the server reads first, then writes. The whole
// conversation, and where in a test each step happens, is in
// docs/exchange.md.
//
// The QP record (perftest_communication.c: ethernet_write_keys, format
// KEY_PRINT_FMT_GID, buffer KEY_MSG_SIZE_GID = 108 bytes):
//
//   "%04x:%04x:%06x:%06x:%08x:%016llx:" LID, OUT_READS, QPN, PSN, RKEY, VADDR
//   "%02x:" x 16                        the GID bytes in wire order
//   "%08x:"                             SRQN
//   "\0"                                107 characters + NUL = 108 bytes
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "uroce/wire/ip_addr.h"

namespace uroce::exchange {

class Channel;

// The version this implementation announces (perftest_parameters.h
// VERSION of perftest 4.5-0.17) in the 16-byte field of exchange_versions().
inline constexpr char kPerftestVersion[] = "6.06";
inline constexpr size_t kPerftestVersionSize = 16;  // char version[MAX_VERSION]
// check_version_compatibility(): perftest exits if atof(peer) < 5.70.
inline constexpr double kPerftestMinPeerVersion = 5.70;

struct PerftestDest {
  uint32_t lid = 0;        // 16 bits; 0 on RoCE
  uint32_t out_reads = 0;  // 16 bits; max outstanding RDMA READ/atomic (1 unless -o / READ, ATOMIC)
  uint32_t qpn = 0;        // 24 bits
  uint32_t psn = 0;        // 24 bits
  uint32_t rkey = 0;
  uint32_t srqn = 0;       // XRC/DC only, else 0
  uint64_t vaddr = 0;      // the remote buffer for RDMA WRITE/READ/atomics
  wire::IpAddr gid;
  uint32_t gid_index = 0;  // the sender's GID index: in the binary record only

  bool operator==(const PerftestDest&) const = default;
};

inline constexpr size_t kPerftestRecordSize = 108;  // KEY_MSG_SIZE_GID
using PerftestRecord = std::array<char, kPerftestRecordSize>;

// The record of `d`, exactly as perftest's sprintf prints it (lowercase
// hex, NUL-terminated). false and a message if a field does not fit its
// width (LID or OUT_READS > 0xffff, QPN or PSN > 0xffffff): perftest would
// print more digits and overflow its buffer.
bool encode_perftest_dest(const PerftestDest& d, PerftestRecord& out, std::string& error);

// Strict parse: exactly 108 bytes, every field its exact width in hex
// digits (either case), each followed by ':', then NUL. perftest's own
// strtol parse takes less; anything else here means the peer is not
// speaking this protocol, and the message says which byte is wrong.
bool decode_perftest_dest(const char* bytes, size_t len, PerftestDest& out, std::string& error);
inline bool decode_perftest_dest(const PerftestRecord& r, PerftestDest& out, std::string& error) {
  return decode_perftest_dest(r.data(), r.size(), out, error);
}

// The record perftest -R sends over its rdma_cm channel instead
// (perftest_communication.c: rdma_write_keys): struct pingpong_dest as
// x86-64 lays it out, every integer in network order, the GID as is:
//
//   0 LID  4 OUT_READS  8 QPN  12 PSN  16 RKEY  20 (4 bytes of padding,
//   not initialised)  24 VADDR (8)  32 GID (16)  48 SRQN  52 GID_INDEX
inline constexpr size_t kPerftestBinaryRecordSize = 56;
using PerftestBinaryRecord = std::array<uint8_t, kPerftestBinaryRecordSize>;
// The padding is sent as zeros. Decoding takes any padding; it fails only
// on a record of another size.
void encode_perftest_dest_binary(const PerftestDest& d, PerftestBinaryRecord& out);
bool decode_perftest_dest_binary(const uint8_t* bytes, size_t len, PerftestDest& out, std::string& error);

// How a session sends its QP records: perftest's text over TCP, its
// binary struct over an rdma_cm channel (-R).
enum class PerftestRecordFormat { kText, kBinary };

// check_sys_data(): two big-endian 32-bit ints, each its own swap.
// perftest then uses the larger of each pair.
struct PerftestSysData {
  int32_t cycle_buffer = 4096;   // buffer alignment = the page size (sysconf)
  int32_t cache_line_size = 64;  // from sysfs, 64 by default

  bool operator==(const PerftestSysData&) const = default;
};

// xchg_bw_reports(): the fields of struct bw_report_data, each its own
// 8-byte big-endian swap, in this order: size, iters, bw_peak, bw_avg,
// msg_rate_avg, then (only with --report-per-port) bw_avg_p1,
// msg_rate_avg_p1, bw_avg_p2, msg_rate_avg_p2. Bandwidths are in the
// report unit (MiB/s = bytes/s / 0x100000, or Gb/s = bytes/s / 125e6 with
// --report_gbits), message rates in Mpps (print_report_bw).
struct PerftestBwReport {
  uint64_t size = 0;   // message size
  uint64_t iters = 0;  // completed iterations (iters >= 5.33 is 8 bytes)
  double bw_peak = 0;
  double bw_avg = 0;
  double msg_rate_avg = 0;
  double bw_avg_p1 = 0;
  double msg_rate_avg_p1 = 0;
  double bw_avg_p2 = 0;
  double msg_rate_avg_p2 = 0;

  bool operator==(const PerftestBwReport&) const = default;
};

enum class PerftestRole { kClient, kServer };

// One side of the conversation on a connected channel. Each method is one
// perftest step and moves exactly perftest's bytes; call them in the order
// of docs/exchange.md. On failure: false and a message naming the step and
// the peer (the channel's own message, e.g. a timeout, included).
class PerftestSession {
 public:
  PerftestSession(Channel& channel, PerftestRole role, PerftestRecordFormat format = PerftestRecordFormat::kText)
      : ch_(channel), role_(role), format_(format) {}

  // exchange_versions() + check_version_compatibility(): 16 bytes each way,
  // kPerftestVersion NUL-padded. Rejects a peer older than 5.70 (perftest
  // exits there) or a field that is not a NUL-terminated string.
  bool exchange_versions(std::string& error);
  const std::string& peer_version() const { return peer_version_; }

  // check_sys_data(): cycle_buffer, then cache_line_size.
  bool exchange_sys_data(const PerftestSysData& mine, PerftestSysData& peer, std::string& error);

  // check_mtu(): the active MTU as an ibv_mtu enum (1 = 256 ... 5 = 4096)
  // printed "%d" + NUL = 2 bytes. `peer` is the peer's number as sent.
  bool exchange_mtu(int mine, int& peer, std::string& error);
  // check_mtu()'s rule: the peer's MTU if it is valid (1..5) and smaller.
  static int agree_mtu(int mine, int peer);

  // ctx_hand_shake(): one 108-byte record each way. perftest uses it both
  // to swap QP records (once per QP) and as a barrier (record of QP 0).
  bool hand_shake(const PerftestDest& mine, PerftestDest& peer, std::string& error);
  bool barrier(const PerftestDest& mine, std::string& error);

  // xchg_bw_reports() (see PerftestBwReport). `per_port` is perftest's
  // --report-per-port, which both sides must agree on.
  bool exchange_bw_reports(const PerftestBwReport& mine, bool per_port, PerftestBwReport& peer,
                           std::string& error);

  // ctx_close_connection(): a hand_shake of QP 0's record, then "done\0"
  // (5 bytes) from each side without waiting for the other (which is why
  // captures show either side's "done" first). Then reads the peer's
  // "done\0"; a peer that closes without one (newer perftest) is accepted.
  // The channel can be destroyed afterwards. Over rdma_cm (binary
  // records) the closing record is all: perftest -R sends no "done".
  bool close(const PerftestDest& mine, std::string& error);

 private:
  bool swap(const void* mine, void* peer, size_t n, const char* step, std::string& error);

  Channel& ch_;
  PerftestRole role_;
  PerftestRecordFormat format_;
  std::string peer_version_;
};

// perftest never sends its QP count (-q): each side sends one record per
// QP, connects, sends them all again, then a barrier record. When the
// counts differ, the records shift: a peer with fewer QPs sends a QPN
// already seen among the first records, a peer with more sends a second
// round that does not repeat the first. `first` are the peer's records of
// the first round so far; `again`, when not null, the second round so far.
// Returns "" or why the QP counts likely differ (my_qps: -q here;
// peer_role: "server" or "client").
std::string perftest_qp_mismatch(const std::vector<PerftestDest>& first, const std::vector<PerftestDest>* again,
                                 size_t my_qps, const char* peer_role);

// What each side sends last in ctx_close_connection(), NUL included.
inline constexpr char kPerftestDone[] = "done";

}  // namespace uroce::exchange
