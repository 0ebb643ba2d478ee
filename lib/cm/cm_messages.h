// SPDX-License-Identifier: BSD-3-Clause
// InfiniBand Communication Manager messages (IBA vol. 1 ch. 12) as Linux's
// ib_cm puts them on the wire over RoCE: a 256-byte MAD (24-byte common
// header, 232-byte data area) in a UD SEND to QP1 with Q_Key 0x80010000.
//
// Each message is a struct of values; encode() writes a whole MAD (header
// and data, unused bytes zero) and decode() reads one, refusing a MAD that
// is not a CM message of class version 2 with method Send. Offsets below
// are those of the MAD data area, which starts at MAD byte 24; every field
// is big-endian and sub-byte fields sit in the high bits of their byte
// unless noted (docs/cm.md lists the layouts).
#pragma once

#include <array>
#include <cstdint>
#include <span>

namespace uroce::cm {

inline constexpr size_t kMadSize = 256;
inline constexpr size_t kMadHeaderSize = 24;
inline constexpr size_t kMadDataSize = kMadSize - kMadHeaderSize;
inline constexpr uint32_t kGsiQpn = 1;
inline constexpr uint32_t kGsiQkey = 0x80010000;

inline constexpr uint8_t kMadBaseVersion = 1;
inline constexpr uint8_t kMgmtClassCm = 0x07;
inline constexpr uint8_t kCmClassVersion = 2;
inline constexpr uint8_t kMethodSend = 0x03;

enum class Attr : uint16_t {
  req = 0x0010,
  mra = 0x0011,
  rej = 0x0012,
  rep = 0x0013,
  rtu = 0x0014,
  dreq = 0x0015,
  drep = 0x0016,
  sidr_req = 0x0017,
  sidr_rep = 0x0018,
};

// Private data each message carries (fixed sizes: the receiver always
// sees the whole field, zero-padded).
inline constexpr size_t kReqPrivate = 92;
inline constexpr size_t kMraPrivate = 222;
inline constexpr size_t kRejPrivate = 148;
inline constexpr size_t kRejAri = 72;
inline constexpr size_t kRepPrivate = 196;
inline constexpr size_t kRtuPrivate = 224;
inline constexpr size_t kDreqPrivate = 220;
inline constexpr size_t kDrepPrivate = 224;
inline constexpr size_t kSidrReqPrivate = 216;
inline constexpr size_t kSidrRepPrivate = 136;
inline constexpr size_t kSidrRepInfo = 72;

// The 24-byte MAD common header.
struct MadHeader {
  uint8_t base_version = kMadBaseVersion;
  uint8_t mgmt_class = kMgmtClassCm;
  uint8_t class_version = kCmClassVersion;
  uint8_t method = kMethodSend;
  uint16_t status = 0;
  uint16_t class_specific = 0;
  uint64_t tid = 0;
  uint16_t attr_id = 0;
  uint32_t attr_mod = 0;
};

// Communication IDs are opaque 4-byte values; kept as the wire's
// big-endian number. 0 means "not known" in matching: never allocated.
using CommId = uint32_t;

struct Gid {
  std::array<uint8_t, 16> raw{};
  bool operator==(const Gid&) const = default;
};

// One path of a REQ (the primary; the alternate is all zero on RoCE).
struct Path {
  uint16_t local_lid = 0xffff;   // permissive on RoCE
  uint16_t remote_lid = 0xffff;
  Gid local_gid{};
  Gid remote_gid{};
  uint32_t flow_label = 0;       // 20 bits
  uint8_t packet_rate = 0;       // 6 bits
  uint8_t traffic_class = 0;
  uint8_t hop_limit = 64;
  uint8_t sl = 0;                // 4 bits
  bool subnet_local = false;
  uint8_t local_ack_timeout = 0;  // 5 bits: the QP's ACK timeout
};

struct Req {
  CommId local_comm_id = 0;
  uint64_t service_id = 0;
  uint64_t local_ca_guid = 0;
  uint32_t local_qkey = 0;
  uint32_t local_qpn = 0;               // 24 bits
  uint8_t responder_resources = 0;      // the sender's max_dest_rd_atomic
  uint32_t local_eecn = 0;              // 24 bits
  uint8_t initiator_depth = 0;          // the sender's max_rd_atomic
  uint32_t remote_eecn = 0;             // 24 bits
  uint8_t remote_cm_response_timeout = 20;  // 5 bits
  uint8_t transport_type = 0;           // 2 bits: 0 RC, 1 UC, 3 XRC
  bool flow_control = false;
  uint32_t starting_psn = 0;            // 24 bits: the PSN the sender expects to receive
  uint8_t local_cm_response_timeout = 20;  // 5 bits
  uint8_t retry_count = 7;              // 3 bits
  uint16_t pkey = 0xffff;
  uint8_t path_mtu = 3;                 // 4 bits, IBV_MTU_* numbering
  bool rdc_exists = false;
  uint8_t rnr_retry_count = 7;          // 3 bits (low bits of its byte)
  uint8_t max_cm_retries = 15;          // 4 bits
  bool srq = false;
  uint8_t extended_transport = 0;       // 3 bits
  Path primary{};
  std::array<uint8_t, kReqPrivate> private_data{};
};

struct Rep {
  CommId local_comm_id = 0;
  CommId remote_comm_id = 0;
  uint32_t local_qkey = 0;
  uint32_t local_qpn = 0;               // 24 bits
  uint32_t local_eecn = 0;              // 24 bits
  uint32_t starting_psn = 0;            // 24 bits
  uint8_t responder_resources = 0;
  uint8_t initiator_depth = 0;
  uint8_t target_ack_delay = 15;        // 5 bits
  uint8_t failover_accepted = 0;        // 2 bits
  bool flow_control = false;
  uint8_t rnr_retry_count = 7;          // 3 bits (high bits of its byte)
  bool srq = false;
  uint64_t local_ca_guid = 0;
  std::array<uint8_t, kRepPrivate> private_data{};
};

struct Rtu {
  CommId local_comm_id = 0;
  CommId remote_comm_id = 0;
  std::array<uint8_t, kRtuPrivate> private_data{};
};

struct Dreq {
  CommId local_comm_id = 0;
  CommId remote_comm_id = 0;
  uint32_t remote_qpn = 0;  // 24 bits: the receiver's QPN, which it checks
  std::array<uint8_t, kDreqPrivate> private_data{};
};

struct Drep {
  CommId local_comm_id = 0;
  CommId remote_comm_id = 0;
  std::array<uint8_t, kDrepPrivate> private_data{};
};

enum class Msg : uint8_t { req = 0, rep = 1, other = 2 };

struct Mra {
  CommId local_comm_id = 0;
  CommId remote_comm_id = 0;
  Msg message_mraed = Msg::req;  // 2 bits
  uint8_t service_timeout = 24;  // 5 bits
  std::array<uint8_t, kMraPrivate> private_data{};
};

// REJ reasons (IBA table 112) that uroce sends or acts on.
enum class RejReason : uint16_t {
  no_qp = 1,
  no_resources = 3,
  timeout = 4,
  unsupported = 5,
  invalid_comm_id = 6,
  invalid_service_id = 8,
  invalid_transport_type = 9,
  stale_conn = 10,
  invalid_gid = 12,
  invalid_mtu = 26,
  consumer_defined = 28,
  invalid_class_version = 31,
};

struct Rej {
  CommId local_comm_id = 0;
  CommId remote_comm_id = 0;
  Msg message_rejected = Msg::req;  // 2 bits
  uint8_t ari_length = 0;           // 7 bits
  uint16_t reason = 0;
  std::array<uint8_t, kRejAri> ari{};
  std::array<uint8_t, kRejPrivate> private_data{};
};

struct SidrReq {
  uint32_t request_id = 0;
  uint16_t pkey = 0xffff;
  uint64_t service_id = 0;
  std::array<uint8_t, kSidrReqPrivate> private_data{};
};

enum class SidrStatus : uint8_t { success = 0, unsupported = 1, reject = 2, no_qp = 3, redirect = 4, bad_version = 5 };

struct SidrRep {
  uint32_t request_id = 0;
  uint8_t status = 0;
  uint8_t info_length = 0;
  uint32_t qpn = 0;  // 24 bits
  uint64_t service_id = 0;
  uint32_t qkey = 0;
  std::array<uint8_t, kSidrRepInfo> info{};
  std::array<uint8_t, kSidrRepPrivate> private_data{};
};

using Mad = std::array<uint8_t, kMadSize>;

// The MAD common header; false when `mad` is shorter than a MAD.
bool decode_header(std::span<const uint8_t> mad, MadHeader& out);
void encode_header(const MadHeader& h, uint8_t* mad);

// Whole MADs: header (class CM, version 2, method Send, `tid`, the
// message's attribute) and data. The decoders take the data area (MAD
// byte 24 on) of a MAD whose header check_cm_header accepted.
Mad encode(const Req& m, uint64_t tid);
Mad encode(const Rep& m, uint64_t tid);
Mad encode(const Rtu& m, uint64_t tid);
Mad encode(const Dreq& m, uint64_t tid);
Mad encode(const Drep& m, uint64_t tid);
Mad encode(const Mra& m, uint64_t tid);
Mad encode(const Rej& m, uint64_t tid);
Mad encode(const SidrReq& m, uint64_t tid);
Mad encode(const SidrRep& m, uint64_t tid);

Req decode_req(const uint8_t* data);
Rep decode_rep(const uint8_t* data);
Rtu decode_rtu(const uint8_t* data);
Dreq decode_dreq(const uint8_t* data);
Drep decode_drep(const uint8_t* data);
Mra decode_mra(const uint8_t* data);
Rej decode_rej(const uint8_t* data);
SidrReq decode_sidr_req(const uint8_t* data);
SidrRep decode_sidr_rep(const uint8_t* data);

// Why a received MAD is not a CM message uroce handles; Linux drops each
// of these silently (no REJ), and so does uroce.
enum class MadCheck { ok, short_mad, base_version, mgmt_class, class_version, method, attribute };

// Checks the header of a MAD received on QP1; `attr` is the CM message on ok.
MadCheck check_cm_header(std::span<const uint8_t> mad, MadHeader& header, Attr& attr);

}  // namespace uroce::cm
