// SPDX-License-Identifier: BSD-3-Clause
// Field positions follow IBA vol. 1 ch. 12 as Linux's ib_cm lays them out
// (docs/cm.md); every position was checked against the bytes Linux 6.1
// sends (tests/data/rxe/send_bw_rdmacm.pcap, test cm-messages).
#include "cm/cm_messages.h"

#include <algorithm>

#include "uroce/wire/byte_order.h"

namespace uroce::cm {
namespace {

using wire::load_be16;
using wire::load_be24;
using wire::load_be32;
using wire::load_be64;
using wire::store_be16;
using wire::store_be24;
using wire::store_be32;
using wire::store_be64;

// The top `width` bits of byte `b` (bit 7 down), and their store.
uint8_t hi_bits(uint8_t b, int width) { return uint8_t(b >> (8 - width)); }
uint8_t put_hi(uint8_t value, int width) { return uint8_t((value & ((1u << width) - 1)) << (8 - width)); }

Mad start(Attr attr, uint64_t tid) {
  Mad mad{};
  MadHeader h;
  h.tid = tid;
  h.attr_id = uint16_t(attr);
  encode_header(h, mad.data());
  return mad;
}

uint8_t* data_of(Mad& mad) { return mad.data() + kMadHeaderSize; }

template <size_t N>
void put_bytes(uint8_t* at, const std::array<uint8_t, N>& from) {
  std::copy(from.begin(), from.end(), at);
}

template <size_t N>
void get_bytes(const uint8_t* at, std::array<uint8_t, N>& to) {
  std::copy(at, at + N, to.begin());
}

void put_gid(uint8_t* at, const Gid& g) { put_bytes(at, g.raw); }
Gid get_gid(const uint8_t* at) {
  Gid g;
  get_bytes(at, g.raw);
  return g;
}

// REQ bytes 52..95: one path (the alternate, at 96..139, stays zero).
void put_path(uint8_t* d, const Path& p) {
  store_be16(d + 52, p.local_lid);
  store_be16(d + 54, p.remote_lid);
  put_gid(d + 56, p.local_gid);
  put_gid(d + 72, p.remote_gid);
  store_be32(d + 88, (p.flow_label & 0xfffff) << 12 | (p.packet_rate & 0x3f));
  d[92] = p.traffic_class;
  d[93] = p.hop_limit;
  d[94] = uint8_t(put_hi(p.sl, 4) | (p.subnet_local ? 0x08 : 0));
  d[95] = put_hi(p.local_ack_timeout, 5);
}

Path get_path(const uint8_t* d) {
  Path p;
  p.local_lid = load_be16(d + 52);
  p.remote_lid = load_be16(d + 54);
  p.local_gid = get_gid(d + 56);
  p.remote_gid = get_gid(d + 72);
  const uint32_t w = load_be32(d + 88);
  p.flow_label = w >> 12;
  p.packet_rate = uint8_t(w & 0x3f);
  p.traffic_class = d[92];
  p.hop_limit = d[93];
  p.sl = hi_bits(d[94], 4);
  p.subnet_local = d[94] & 0x08;
  p.local_ack_timeout = hi_bits(d[95], 5);
  return p;
}

}  // namespace

bool decode_header(std::span<const uint8_t> mad, MadHeader& h) {
  if (mad.size() < kMadSize) return false;
  const uint8_t* m = mad.data();
  h.base_version = m[0];
  h.mgmt_class = m[1];
  h.class_version = m[2];
  h.method = m[3];
  h.status = load_be16(m + 4);
  h.class_specific = load_be16(m + 6);
  h.tid = load_be64(m + 8);
  h.attr_id = load_be16(m + 16);
  h.attr_mod = load_be32(m + 20);
  return true;
}

void encode_header(const MadHeader& h, uint8_t* m) {
  m[0] = h.base_version;
  m[1] = h.mgmt_class;
  m[2] = h.class_version;
  m[3] = h.method;
  store_be16(m + 4, h.status);
  store_be16(m + 6, h.class_specific);
  store_be64(m + 8, h.tid);
  store_be16(m + 16, h.attr_id);
  store_be16(m + 18, 0);
  store_be32(m + 20, h.attr_mod);
}

MadCheck check_cm_header(std::span<const uint8_t> mad, MadHeader& h, Attr& attr) {
  if (!decode_header(mad, h)) return MadCheck::short_mad;
  if (h.base_version != kMadBaseVersion) return MadCheck::base_version;
  if (h.mgmt_class != kMgmtClassCm) return MadCheck::mgmt_class;
  if (h.class_version != kCmClassVersion) return MadCheck::class_version;
  if (h.method != kMethodSend) return MadCheck::method;
  if (h.attr_id < uint16_t(Attr::req) || h.attr_id > uint16_t(Attr::sidr_rep)) return MadCheck::attribute;
  attr = Attr(h.attr_id);
  return MadCheck::ok;
}

Mad encode(const Req& r, uint64_t tid) {
  Mad mad = start(Attr::req, tid);
  uint8_t* d = data_of(mad);
  store_be32(d + 0, r.local_comm_id);
  store_be64(d + 8, r.service_id);
  store_be64(d + 16, r.local_ca_guid);
  store_be32(d + 28, r.local_qkey);
  store_be24(d + 32, r.local_qpn);
  d[35] = r.responder_resources;
  store_be24(d + 36, r.local_eecn);
  d[39] = r.initiator_depth;
  store_be24(d + 40, r.remote_eecn);
  d[43] = uint8_t(put_hi(r.remote_cm_response_timeout, 5) | (r.transport_type & 3) << 1 | (r.flow_control ? 1 : 0));
  store_be24(d + 44, r.starting_psn);
  d[47] = uint8_t(put_hi(r.local_cm_response_timeout, 5) | (r.retry_count & 7));
  store_be16(d + 48, r.pkey);
  d[50] = uint8_t(put_hi(r.path_mtu, 4) | (r.rdc_exists ? 0x08 : 0) | (r.rnr_retry_count & 7));
  d[51] = uint8_t(put_hi(r.max_cm_retries, 4) | (r.srq ? 0x08 : 0) | (r.extended_transport & 7));
  put_path(d, r.primary);
  put_bytes(d + 140, r.private_data);
  return mad;
}

Req decode_req(const uint8_t* d) {
  Req r;
  r.local_comm_id = load_be32(d + 0);
  r.service_id = load_be64(d + 8);
  r.local_ca_guid = load_be64(d + 16);
  r.local_qkey = load_be32(d + 28);
  r.local_qpn = load_be24(d + 32);
  r.responder_resources = d[35];
  r.local_eecn = load_be24(d + 36);
  r.initiator_depth = d[39];
  r.remote_eecn = load_be24(d + 40);
  r.remote_cm_response_timeout = hi_bits(d[43], 5);
  r.transport_type = uint8_t(d[43] >> 1 & 3);
  r.flow_control = d[43] & 1;
  r.starting_psn = load_be24(d + 44);
  r.local_cm_response_timeout = hi_bits(d[47], 5);
  r.retry_count = d[47] & 7;
  r.pkey = load_be16(d + 48);
  r.path_mtu = hi_bits(d[50], 4);
  r.rdc_exists = d[50] & 0x08;
  r.rnr_retry_count = d[50] & 7;
  r.max_cm_retries = hi_bits(d[51], 4);
  r.srq = d[51] & 0x08;
  r.extended_transport = d[51] & 7;
  r.primary = get_path(d);
  get_bytes(d + 140, r.private_data);
  return r;
}

Mad encode(const Rep& r, uint64_t tid) {
  Mad mad = start(Attr::rep, tid);
  uint8_t* d = data_of(mad);
  store_be32(d + 0, r.local_comm_id);
  store_be32(d + 4, r.remote_comm_id);
  store_be32(d + 8, r.local_qkey);
  store_be24(d + 12, r.local_qpn);
  store_be24(d + 16, r.local_eecn);
  store_be24(d + 20, r.starting_psn);
  d[24] = r.responder_resources;
  d[25] = r.initiator_depth;
  d[26] = uint8_t(put_hi(r.target_ack_delay, 5) | (r.failover_accepted & 3) << 1 | (r.flow_control ? 1 : 0));
  d[27] = uint8_t(put_hi(r.rnr_retry_count, 3) | (r.srq ? 0x10 : 0));
  store_be64(d + 28, r.local_ca_guid);
  put_bytes(d + 36, r.private_data);
  return mad;
}

Rep decode_rep(const uint8_t* d) {
  Rep r;
  r.local_comm_id = load_be32(d + 0);
  r.remote_comm_id = load_be32(d + 4);
  r.local_qkey = load_be32(d + 8);
  r.local_qpn = load_be24(d + 12);
  r.local_eecn = load_be24(d + 16);
  r.starting_psn = load_be24(d + 20);
  r.responder_resources = d[24];
  r.initiator_depth = d[25];
  r.target_ack_delay = hi_bits(d[26], 5);
  r.failover_accepted = uint8_t(d[26] >> 1 & 3);
  r.flow_control = d[26] & 1;
  r.rnr_retry_count = hi_bits(d[27], 3);
  r.srq = d[27] & 0x10;
  r.local_ca_guid = load_be64(d + 28);
  get_bytes(d + 36, r.private_data);
  return r;
}

Mad encode(const Rtu& r, uint64_t tid) {
  Mad mad = start(Attr::rtu, tid);
  uint8_t* d = data_of(mad);
  store_be32(d + 0, r.local_comm_id);
  store_be32(d + 4, r.remote_comm_id);
  put_bytes(d + 8, r.private_data);
  return mad;
}

Rtu decode_rtu(const uint8_t* d) {
  Rtu r;
  r.local_comm_id = load_be32(d + 0);
  r.remote_comm_id = load_be32(d + 4);
  get_bytes(d + 8, r.private_data);
  return r;
}

Mad encode(const Dreq& r, uint64_t tid) {
  Mad mad = start(Attr::dreq, tid);
  uint8_t* d = data_of(mad);
  store_be32(d + 0, r.local_comm_id);
  store_be32(d + 4, r.remote_comm_id);
  store_be24(d + 8, r.remote_qpn);
  put_bytes(d + 12, r.private_data);
  return mad;
}

Dreq decode_dreq(const uint8_t* d) {
  Dreq r;
  r.local_comm_id = load_be32(d + 0);
  r.remote_comm_id = load_be32(d + 4);
  r.remote_qpn = load_be24(d + 8);
  get_bytes(d + 12, r.private_data);
  return r;
}

Mad encode(const Drep& r, uint64_t tid) {
  Mad mad = start(Attr::drep, tid);
  uint8_t* d = data_of(mad);
  store_be32(d + 0, r.local_comm_id);
  store_be32(d + 4, r.remote_comm_id);
  put_bytes(d + 8, r.private_data);
  return mad;
}

Drep decode_drep(const uint8_t* d) {
  Drep r;
  r.local_comm_id = load_be32(d + 0);
  r.remote_comm_id = load_be32(d + 4);
  get_bytes(d + 8, r.private_data);
  return r;
}

Mad encode(const Mra& r, uint64_t tid) {
  Mad mad = start(Attr::mra, tid);
  uint8_t* d = data_of(mad);
  store_be32(d + 0, r.local_comm_id);
  store_be32(d + 4, r.remote_comm_id);
  d[8] = put_hi(uint8_t(r.message_mraed), 2);
  d[9] = put_hi(r.service_timeout, 5);
  put_bytes(d + 10, r.private_data);
  return mad;
}

Mra decode_mra(const uint8_t* d) {
  Mra r;
  r.local_comm_id = load_be32(d + 0);
  r.remote_comm_id = load_be32(d + 4);
  r.message_mraed = Msg(hi_bits(d[8], 2));
  r.service_timeout = hi_bits(d[9], 5);
  get_bytes(d + 10, r.private_data);
  return r;
}

Mad encode(const Rej& r, uint64_t tid) {
  Mad mad = start(Attr::rej, tid);
  uint8_t* d = data_of(mad);
  store_be32(d + 0, r.local_comm_id);
  store_be32(d + 4, r.remote_comm_id);
  d[8] = put_hi(uint8_t(r.message_rejected), 2);
  d[9] = put_hi(r.ari_length, 7);
  store_be16(d + 10, r.reason);
  put_bytes(d + 12, r.ari);
  put_bytes(d + 84, r.private_data);
  return mad;
}

Rej decode_rej(const uint8_t* d) {
  Rej r;
  r.local_comm_id = load_be32(d + 0);
  r.remote_comm_id = load_be32(d + 4);
  r.message_rejected = Msg(hi_bits(d[8], 2));
  r.ari_length = hi_bits(d[9], 7);
  r.reason = load_be16(d + 10);
  get_bytes(d + 12, r.ari);
  get_bytes(d + 84, r.private_data);
  return r;
}

Mad encode(const SidrReq& r, uint64_t tid) {
  Mad mad = start(Attr::sidr_req, tid);
  uint8_t* d = data_of(mad);
  store_be32(d + 0, r.request_id);
  store_be16(d + 4, r.pkey);
  store_be64(d + 8, r.service_id);
  put_bytes(d + 16, r.private_data);
  return mad;
}

SidrReq decode_sidr_req(const uint8_t* d) {
  SidrReq r;
  r.request_id = load_be32(d + 0);
  r.pkey = load_be16(d + 4);
  r.service_id = load_be64(d + 8);
  get_bytes(d + 16, r.private_data);
  return r;
}

Mad encode(const SidrRep& r, uint64_t tid) {
  Mad mad = start(Attr::sidr_rep, tid);
  uint8_t* d = data_of(mad);
  store_be32(d + 0, r.request_id);
  d[4] = r.status;
  d[5] = r.info_length;
  store_be24(d + 8, r.qpn);
  store_be64(d + 12, r.service_id);
  store_be32(d + 20, r.qkey);
  put_bytes(d + 24, r.info);
  put_bytes(d + 96, r.private_data);
  return mad;
}

SidrRep decode_sidr_rep(const uint8_t* d) {
  SidrRep r;
  r.request_id = load_be32(d + 0);
  r.status = d[4];
  r.info_length = d[5];
  r.qpn = load_be24(d + 8);
  r.service_id = load_be64(d + 12);
  r.qkey = load_be32(d + 20);
  get_bytes(d + 24, r.info);
  get_bytes(d + 96, r.private_data);
  return r;
}

}  // namespace uroce::cm
