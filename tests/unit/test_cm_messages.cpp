// SPDX-License-Identifier: BSD-3-Clause
// The CM codec (lib/cm) against what Linux 6.1 sends: the REQ, REP, RTU,
// DREQ and DREP MADs of `ib_send_bw -R` on rxe (tests/data/rxe/
// send_bw_rdmacm.pcap) decode to the values the capture's README and
// Linux's ib_cm give, and encode back to the same 256 bytes. MRA, REJ and
// SIDR, absent from the capture, round-trip with every field at its
// largest value, each in the byte and bits IBA vol. 1 ch. 12 gives it.
#include <catch2/catch.hpp>

#include "cm/cm_messages.h"
#include "cm/cma_header.h"
#include "rxe_capture.h"

#include <cstring>
#include <vector>

namespace {

using namespace uroce::cm;
using uroce::test::RawRoce;

// The MAD of a UD SEND to QP1: after the BTH (12 bytes) and DETH (8).
struct CapturedMad {
  int frame_no;
  const uint8_t* mad;
  uint32_t qkey;
  uint32_t src_qp;
};

std::vector<CapturedMad> captured_mads() {
  std::vector<CapturedMad> out;
  for (const RawRoce& r : uroce::test::rxe_capture("send_bw_rdmacm.pcap").roce) {
    if (r.dest_qp != kGsiQpn) continue;
    REQUIRE(r.opcode == 0x64);  // UD SEND ONLY
    REQUIRE(r.bytes->size() >= r.bth + 20 + kMadSize);
    out.push_back({r.frame_no, r.bytes->data() + r.bth + 20, r.be32_at(12), r.be32_at(16) & 0xffffff});
  }
  return out;
}

const CapturedMad& frame(const std::vector<CapturedMad>& mads, int no) {
  for (const auto& m : mads)
    if (m.frame_no == no) return m;
  FAIL("no MAD in frame " << no);
  return mads.front();
}

Gid mapped(uint8_t a, uint8_t b, uint8_t c, uint8_t d) {
  Gid g;
  g.raw[10] = g.raw[11] = 0xff;
  g.raw[12] = a, g.raw[13] = b, g.raw[14] = c, g.raw[15] = d;
  return g;
}

template <class Msg>
void same_bytes(const Mad& ours, const uint8_t* theirs) {
  CHECK(std::memcmp(ours.data(), theirs, kMadSize) == 0);
}

Attr attr_of(const uint8_t* mad) {
  MadHeader h;
  Attr a{};
  REQUIRE(check_cm_header({mad, kMadSize}, h, a) == MadCheck::ok);
  return a;
}

uint64_t tid_of(const uint8_t* mad) {
  MadHeader h;
  REQUIRE(decode_header({mad, kMadSize}, h));
  return h.tid;
}

}  // namespace

TEST_CASE("CM: Linux's REQ, REP and RTU decode to its values and encode to its bytes", "[cm]") {
  const auto mads = captured_mads();
  REQUIRE(mads.size() >= 7);
  for (const auto& m : mads) {
    CHECK(m.qkey == kGsiQkey);
    CHECK(m.src_qp == kGsiQpn);
  }

  const CapturedMad& req_mad = frame(mads, 1);
  REQUIRE(attr_of(req_mad.mad) == Attr::req);
  CHECK(tid_of(req_mad.mad) == 0x00000002726fcbddull);
  const Req req = decode_req(req_mad.mad + kMadHeaderSize);
  CHECK(req.local_comm_id == 0xddcb6f72u);
  CHECK(req.service_id == 0x0000000001064853ull);
  CHECK(req.local_ca_guid == 0x505400fffe990003ull);
  CHECK(req.local_qkey == 0);
  CHECK(req.local_qpn == 0x11);
  CHECK(req.responder_resources == 0);
  CHECK(req.initiator_depth == 0);
  CHECK(req.remote_cm_response_timeout == 20);
  CHECK(req.transport_type == 0);
  CHECK_FALSE(req.flow_control);
  CHECK(req.starting_psn == 0x4cb64f);
  CHECK(req.local_cm_response_timeout == 20);
  CHECK(req.retry_count == 7);
  CHECK(req.pkey == 0xffff);
  CHECK(req.path_mtu == 3);
  CHECK(req.rnr_retry_count == 7);
  CHECK(req.max_cm_retries == 15);
  CHECK_FALSE(req.srq);
  CHECK(req.primary.local_lid == 0xffff);
  CHECK(req.primary.remote_lid == 0xffff);
  CHECK(req.primary.local_gid == mapped(10, 99, 0, 3));
  CHECK(req.primary.remote_gid == mapped(10, 99, 0, 2));
  CHECK(req.primary.flow_label == 0x9587a);
  CHECK(req.primary.packet_rate == 0);
  CHECK(req.primary.traffic_class == 0);
  CHECK(req.primary.hop_limit == 64);
  CHECK(req.primary.sl == 0);
  CHECK(req.primary.local_ack_timeout == 19);
  // rdma_cm's header in front of the private data, and what it implies.
  CmaHeader cma;
  REQUIRE(decode_cma_header(req.private_data, cma));
  CHECK(cma.src_port == 0xcef9);
  const uint8_t client[4] = {10, 99, 0, 3}, server[4] = {10, 99, 0, 2};
  CHECK(cma.src == uroce::wire::IpAddr::from_v4(client));
  CHECK(cma.dst == uroce::wire::IpAddr::from_v4(server));
  PortSpace ps{};
  REQUIRE(service_port_space(req.service_id, ps));
  CHECK(ps == PortSpace::tcp);
  CHECK(service_port(req.service_id) == 18515);
  CHECK(service_id(PortSpace::tcp, 18515) == req.service_id);
  CHECK(cma_flow_label(cma.src_port, 18515) == req.primary.flow_label);
  uint8_t cma_bytes[kCmaHeaderSize];
  encode_cma_header(cma, cma_bytes);
  CHECK(std::memcmp(cma_bytes, req.private_data.data(), kCmaHeaderSize) == 0);
  same_bytes<Req>(encode(req, tid_of(req_mad.mad)), req_mad.mad);

  const CapturedMad& rep_mad = frame(mads, 2);
  REQUIRE(attr_of(rep_mad.mad) == Attr::rep);
  CHECK(tid_of(rep_mad.mad) == tid_of(req_mad.mad));  // a reply echoes the REQ's TID
  const Rep rep = decode_rep(rep_mad.mad + kMadHeaderSize);
  CHECK(rep.local_comm_id == 0x9ce05654u);
  CHECK(rep.remote_comm_id == req.local_comm_id);
  CHECK(rep.local_qpn == 0x11);
  CHECK(rep.starting_psn == 0xb7fd2b);
  CHECK(rep.responder_resources == 0);
  CHECK(rep.initiator_depth == 0);
  CHECK(rep.target_ack_delay == 15);
  CHECK(rep.failover_accepted == 0);
  CHECK_FALSE(rep.flow_control);
  CHECK(rep.rnr_retry_count == 7);
  CHECK_FALSE(rep.srq);
  CHECK(rep.local_ca_guid == 0x505400fffe990002ull);
  same_bytes<Rep>(encode(rep, tid_of(rep_mad.mad)), rep_mad.mad);

  const CapturedMad& rtu_mad = frame(mads, 3);
  REQUIRE(attr_of(rtu_mad.mad) == Attr::rtu);
  const Rtu rtu = decode_rtu(rtu_mad.mad + kMadHeaderSize);
  CHECK(rtu.local_comm_id == req.local_comm_id);
  CHECK(rtu.remote_comm_id == rep.local_comm_id);
  same_bytes<Rtu>(encode(rtu, tid_of(rtu_mad.mad)), rtu_mad.mad);
}

TEST_CASE("CM: Linux's DREQ and DREP decode to its values and encode to its bytes", "[cm]") {
  const auto mads = captured_mads();
  int dreqs = 0, dreps = 0;
  for (const auto& m : mads) {
    const Attr a = attr_of(m.mad);
    if (a == Attr::dreq) {
      const Dreq d = decode_dreq(m.mad + kMadHeaderSize);
      CHECK(d.local_comm_id != 0);
      CHECK(d.remote_comm_id != 0);
      // The receiver's QPN, which it checks: perftest's two QPs, 0x11 and 0x12.
      CHECK((d.remote_qpn == 0x11 || d.remote_qpn == 0x12));
      same_bytes<Dreq>(encode(d, tid_of(m.mad)), m.mad);
      ++dreqs;
    } else if (a == Attr::drep) {
      const Drep d = decode_drep(m.mad + kMadHeaderSize);
      CHECK(d.local_comm_id != 0);
      same_bytes<Drep>(encode(d, tid_of(m.mad)), m.mad);
      ++dreps;
    }
  }
  CHECK(dreqs == 2);
  CHECK(dreps == 2);
  const Dreq first = decode_dreq(frame(mads, 61).mad + kMadHeaderSize);
  CHECK(first.remote_qpn == 0x12);
}

TEST_CASE("CM: MRA, REJ and SIDR fields sit where IBA puts them", "[cm]") {
  Mra mra;
  mra.local_comm_id = 0x01020304;
  mra.remote_comm_id = 0x05060708;
  mra.message_mraed = Msg::rep;
  mra.service_timeout = 24;
  mra.private_data.back() = 0xab;
  Mad m = encode(mra, 7);
  const uint8_t* d = m.data() + kMadHeaderSize;
  CHECK(d[8] == 0x40);  // MessageMRAed in bits 7:6
  CHECK(d[9] == 0xc0);  // ServiceTimeout 24 in bits 7:3, as Linux sends it
  CHECK(d[10 + kMraPrivate - 1] == 0xab);
  const Mra mra2 = decode_mra(d);
  CHECK(mra2.message_mraed == Msg::rep);
  CHECK(mra2.service_timeout == 24);
  CHECK(mra2.remote_comm_id == mra.remote_comm_id);

  Rej rej;
  rej.local_comm_id = 0;
  rej.remote_comm_id = 0xddcb6f72;
  rej.message_rejected = Msg::other;
  rej.ari_length = 8;
  rej.reason = uint16_t(RejReason::invalid_service_id);
  rej.ari[0] = 0x50;
  rej.private_data[0] = 0x11;
  rej.private_data.back() = 0x22;
  m = encode(rej, 9);
  d = m.data() + kMadHeaderSize;
  CHECK(d[8] == 0x80);
  CHECK(d[9] == 0x10);  // ARI length 8 in bits 7:1
  CHECK(d[10] == 0);
  CHECK(d[11] == 8);
  CHECK(d[12] == 0x50);
  CHECK(d[84] == 0x11);
  CHECK(d[84 + kRejPrivate - 1] == 0x22);
  const Rej rej2 = decode_rej(d);
  CHECK(rej2.message_rejected == Msg::other);
  CHECK(rej2.ari_length == 8);
  CHECK(rej2.reason == 8);
  CHECK(rej2.private_data == rej.private_data);

  SidrReq sreq;
  sreq.request_id = 0xcafe0001;
  sreq.service_id = service_id(PortSpace::udp, 7174);
  sreq.private_data.back() = 0x33;
  m = encode(sreq, 11);
  d = m.data() + kMadHeaderSize;
  CHECK(d[4] == 0xff);
  CHECK(d[5] == 0xff);
  CHECK(d[14] == 0x1c);  // port 7174 = 0x1c06
  CHECK(d[15] == 0x06);
  const SidrReq sreq2 = decode_sidr_req(d);
  CHECK(sreq2.service_id == 0x0000000001111c06ull);
  CHECK(sreq2.private_data == sreq.private_data);

  SidrRep srep;
  srep.request_id = sreq.request_id;
  srep.status = uint8_t(SidrStatus::success);
  srep.qpn = 0xabcdef;
  srep.service_id = sreq.service_id;
  srep.qkey = 0x01234567;
  m = encode(srep, 11);
  d = m.data() + kMadHeaderSize;
  CHECK(d[8] == 0xab);
  CHECK(d[10] == 0xef);
  CHECK(d[11] == 0);  // the QPN's word shares no bits with what follows
  CHECK(d[12 + 6] == 0x1c);
  CHECK(d[20] == 0x01);
  CHECK(d[23] == 0x67);
  const SidrRep srep2 = decode_sidr_rep(d);
  CHECK(srep2.qpn == 0xabcdef);
  CHECK(srep2.qkey == 0x01234567);
  CHECK(srep2.service_id == sreq.service_id);
}

TEST_CASE("CM: every REQ and REP field at its largest value stays in its own bits", "[cm]") {
  Req r;
  r.local_comm_id = 0xffffffff;
  r.local_qpn = 0xffffff;
  r.responder_resources = 0xa5;
  r.initiator_depth = 0x5a;
  r.remote_cm_response_timeout = 31;
  r.transport_type = 1;
  r.flow_control = true;
  r.starting_psn = 0xffffff;
  r.local_cm_response_timeout = 0;
  r.retry_count = 5;
  r.path_mtu = 5;
  r.rnr_retry_count = 6;
  r.max_cm_retries = 9;
  r.srq = true;
  r.primary.flow_label = 0xfffff;
  r.primary.packet_rate = 0x3f;
  r.primary.sl = 15;
  r.primary.subnet_local = true;
  r.primary.local_ack_timeout = 31;
  const Mad m = encode(r, 1);
  const uint8_t* d = m.data() + kMadHeaderSize;
  CHECK(d[35] == 0xa5);
  CHECK(d[39] == 0x5a);
  CHECK(d[43] == 0xfb);  // 31 << 3 | 1 << 1 | 1
  CHECK(d[47] == 0x05);
  CHECK(d[50] == 0x56);  // MTU 5 high, RNR 6 low
  CHECK(d[51] == 0x98);  // MaxCMRetries 9 high, SRQ bit 3
  CHECK(d[91] == 0x3f);
  CHECK(d[94] == 0xf8);
  CHECK(d[95] == 0xf8);
  for (size_t i = 96; i < 140; ++i) CHECK(d[i] == 0);  // no alternate path
  const Req back = decode_req(d);
  CHECK(back.local_qpn == r.local_qpn);
  CHECK(back.responder_resources == r.responder_resources);
  CHECK(back.initiator_depth == r.initiator_depth);
  CHECK(back.remote_cm_response_timeout == 31);
  CHECK(back.transport_type == 1);
  CHECK(back.flow_control);
  CHECK(back.starting_psn == 0xffffff);
  CHECK(back.retry_count == 5);
  CHECK(back.path_mtu == 5);
  CHECK(back.rnr_retry_count == 6);
  CHECK(back.max_cm_retries == 9);
  CHECK(back.srq);
  CHECK(back.primary.flow_label == 0xfffff);
  CHECK(back.primary.packet_rate == 0x3f);
  CHECK(back.primary.sl == 15);
  CHECK(back.primary.subnet_local);
  CHECK(back.primary.local_ack_timeout == 31);

  Rep p;
  p.local_qpn = 0xffffff;
  p.starting_psn = 0xffffff;
  p.target_ack_delay = 31;
  p.failover_accepted = 3;
  p.flow_control = true;
  p.rnr_retry_count = 7;
  p.srq = true;
  const Mad pm = encode(p, 1);
  const uint8_t* pd = pm.data() + kMadHeaderSize;
  CHECK(pd[15] == 0);
  CHECK(pd[23] == 0);
  CHECK(pd[26] == 0xff);
  CHECK(pd[27] == 0xf0);  // RNR retry in bits 7:5, SRQ bit 4
  const Rep pb = decode_rep(pd);
  CHECK(pb.rnr_retry_count == 7);
  CHECK(pb.srq);
  CHECK(pb.failover_accepted == 3);
}

TEST_CASE("CM: a MAD that is not a CM Send of class version 2 is refused, as Linux drops it", "[cm]") {
  Mad m = encode(Rtu{}, 1);
  MadHeader h;
  Attr a{};
  CHECK(check_cm_header({m.data(), kMadSize}, h, a) == MadCheck::ok);
  CHECK(check_cm_header({m.data(), kMadSize - 1}, h, a) == MadCheck::short_mad);
  Mad bad = m;
  bad[0] = 2;
  CHECK(check_cm_header({bad.data(), kMadSize}, h, a) == MadCheck::base_version);
  bad = m;
  bad[1] = 0x01;
  CHECK(check_cm_header({bad.data(), kMadSize}, h, a) == MadCheck::mgmt_class);
  bad = m;
  bad[2] = 1;
  CHECK(check_cm_header({bad.data(), kMadSize}, h, a) == MadCheck::class_version);
  bad = m;
  bad[3] = 0x83;
  CHECK(check_cm_header({bad.data(), kMadSize}, h, a) == MadCheck::method);
  bad = m;
  bad[17] = 0x19;  // LAP: not on RoCE
  CHECK(check_cm_header({bad.data(), kMadSize}, h, a) == MadCheck::attribute);
  bad[17] = 0x0f;
  CHECK(check_cm_header({bad.data(), kMadSize}, h, a) == MadCheck::attribute);

  // The CMA header: another version, or an IP version that is neither 4 nor 6.
  uint8_t hdr[kCmaHeaderSize] = {};
  CmaHeader c;
  hdr[1] = 0x40;
  CHECK(decode_cma_header(hdr, c));
  hdr[0] = 1;
  CHECK_FALSE(decode_cma_header(hdr, c));
  hdr[0] = 0;
  hdr[1] = 0x50;
  CHECK_FALSE(decode_cma_header(hdr, c));
  CHECK_FALSE(decode_cma_header({hdr, kCmaHeaderSize - 1}, c));
  PortSpace ps{};
  CHECK_FALSE(service_port_space(0x0000000101064853ull, ps));
  CHECK_FALSE(service_port_space(0x0000000001074853ull, ps));
}
