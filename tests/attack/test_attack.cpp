// SPDX-License-Identifier: BSD-3-Clause
// The attack suite: one row per attack class, each with the exact answer
// the attacker must get (ACK/NAK code and PSN, READ response bytes, a
// retransmission, or silence) as Linux rxe would give it (or uroce's own
// where it deliberately differs, marked in docs/testing.md), the victim QP's
// state afterwards, the counter that records it, and the victim's memory:
// no canary byte around any region may change, and the target region only
// where the row says. Every row runs over IPv4 and IPv6, path MTU 1024 and
// 4096, the embedded and the threaded engine, contiguous and segmented
// frames, and with zero-copy transmit off and on. docs/testing.md lists the
// classes and where uroce answers differently from rxe, and why.
#include <climits>
#include <cstring>

#include "attack_run.h"
#include "uroce/wire/ext_headers.h"

namespace uroce::attack {
namespace {

using namespace wire::op;
constexpr uint8_t kAck = wire::kAethAckNoCredit;
constexpr uint8_t kNakSeq = 0x60, kNakInv = 0x61, kNakAcc = 0x62;
constexpr uint8_t kRnr1 = 0x21;  // RNR NAK with the victim's min_rnr_timer 1
constexpr int32_t kNoProbe = INT32_MIN;
constexpr int kRcNoWrite = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
constexpr int kRcNoAtomic = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE;

// One frame the attacker must receive, in order.
struct Want {
  uint8_t opcode;
  int syndrome = -1;  // AETH syndrome, -1: none to check
  bool sq = false;    // PSN relative to the victim's first send PSN, else to its first receive PSN
  int32_t psn = 0;
  int fill = -1;      // READ response / WRITE request: every payload byte; -1 unchecked
  uint32_t len = 0;   // payload length when fill is set
  int64_t orig = -1;  // atomic ACK's original value
};

// A counter that must move by `delta`: the device's or the QP's.
struct Count {
  uint64_t DeviceCounters::*dev = nullptr;
  uint64_t TransportCounters::*qp = nullptr;
  uint64_t delta = 1;
};

struct AttackClass {
  const char* id;
  Setup setup;
  void (*attack)(Run&);
  std::vector<Want> replies;  // empty: silence
  ibv_qp_state state = IBV_QPS_RTS;
  Count count{};
  // Bytes of rw the attack may change ([off, off+len)); each must be `fill` unless -1.
  size_t mem_off = 0, mem_len = 0;
  int mem_fill = -1;
  int32_t probe = kNoProbe;     // RTS afterwards: a WRITE at E(probe) must be acknowledged
  void (*after)(Run&) = nullptr;
};

Count dev(uint64_t DeviceCounters::*m, uint64_t d = 1) { return Count{m, nullptr, d}; }
Count qpc(uint64_t TransportCounters::*m, uint64_t d = 1) { return Count{nullptr, m, d}; }

wire::PacketFields stranger(wire::PacketFields f, const Run& r) {
  f.ip.src = r.rig.stranger_ip;
  return f;
}

// The first completion must be `status`, for work request wr_id.
void expect_wc(Run& r, ibv_wc_status status, uint64_t wr_id) {
  const auto wcs = r.completions(1);
  CHECK(!wcs.empty());
  if (wcs.empty()) return;
  CHECK(wcs[0].wr_id == wr_id);
  CHECK(int(wcs[0].status) == int(status));
}

void no_wc(Run& r) { CHECK(r.completions(0).empty()); }

// The genuine ACK still completes the WRITE the spoofed answer did not.
void genuine_ack_completes(Run& r) {
  no_wc(r);
  r.send(r.resp(RC_ACKNOWLEDGE, 0, kAck));
  expect_wc(r, IBV_WC_SUCCESS, 1);
  CHECK(r.qp->state() == IBV_QPS_RTS);
}

// The victim as requester: its WRITE, taken off the wire by the attacker.
void victim_writes(Run& r) {
  r.post_write(256);
  r.take_request(RC_RDMA_WRITE_ONLY, Run::S(0));
}

// A type 2 window on rw [4096, 8192) through the victim QP, and a WRITE of
// 64 B through its key at E: acknowledged, the bytes land.
void write_through_window(Run& r) {
  r.bind_window(4096, 4096);
  auto f = r.write(RC_RDMA_WRITE_ONLY, 0, 4096, 64);
  f.ext.reth_rkey = r.mw_key;
  r.send(f);
  const std::vector<Frame> got = r.rig.collect(1);
  REQUIRE(got.size() == 1);
  CHECK(int(got[0].opcode()) == int(RC_ACKNOWLEDGE));
  CHECK(int(got[0].syndrome()) == int(kAck));
  CHECK(got[0].psn() == Run::E(0));
}

// The same WRITE again through the window's key, at E(psn_off), other bytes.
void write_again_through_window(Run& r, int32_t psn_off) {
  auto f = r.write(RC_RDMA_WRITE_ONLY, psn_off, 4096, 64);
  f.ext.reth_rkey = r.mw_key;
  r.send(f, 0x77);
}

// A multicast MAC of the frame's family that the victim never joined.
wire::MacAddr unjoined_group(const Run& r) {
  return r.rig.cfg.ipv6 ? wire::MacAddr{{0x33, 0x33, 0, 0, 0, 0xFB}} : wire::MacAddr{{0x01, 0, 0x5E, 0, 0, 0xFB}};
}

// A FIRST of one path MTU at E, then a MIDDLE of `middle` bytes at E+1.
void first_then_middle(Run& r, uint8_t first, uint8_t mid, uint32_t middle) {
  const uint32_t m = r.pmtu();
  auto f = first == RC_RDMA_WRITE_FIRST ? r.write(first, 0, 0, m, 3 * m) : r.req(first, 0, m);
  f.bth.ack_req = false;
  r.send(f);
  r.send(r.req(mid, 1, middle), 0x77);
}

// Only the FIRST's path MTU of 0xEE landed in `g` (rw, or recv for a SEND).
void only_the_first_landed(Run& r, GuardedRegion& g) {
  CHECK(g.changed_outside(0, r.pmtu()) == -1);
  for (size_t i = 0; i < r.pmtu(); ++i)
    if (g.data()[i] != 0xEE) {
      FAIL_CHECK("byte " << i << " of the FIRST not written");
      break;
    }
}

void edit_and_send(Run& r, wire::PacketFields f, void (*edit)(std::vector<uint8_t>&, const Offsets&)) {
  std::vector<uint8_t> fr = r.build(f);
  edit(fr, offsets_of(fr));
  r.send_frame(fr);
}

const std::vector<AttackClass>& classes() {
  static const std::vector<AttackClass> t = {
      // --- bounds and wrap-around
      {"write-past-region-end", {}, +[](Run& r) { r.send(r.write(RC_RDMA_WRITE_ONLY, 0, kRwLen - 32, 64)); },
       {{RC_ACKNOWLEDGE, kNakAcc, false, 0}}, IBV_QPS_ERR, qpc(&TransportCounters::nak_sent)},
      {"write-before-region-start", {},
       +[](Run& r) {
         auto f = r.write(RC_RDMA_WRITE_ONLY, 0, 0, 32);
         f.ext.reth_va = r.rw->va() - 16;
         r.send(f);
       },
       {{RC_ACKNOWLEDGE, kNakAcc, false, 0}}, IBV_QPS_ERR, qpc(&TransportCounters::nak_sent)},
      {"write-va-wraps-2^64", {},
       +[](Run& r) {
         auto f = r.write(RC_RDMA_WRITE_ONLY, 0, 0, 64);
         f.ext.reth_va = ~uint64_t(0) - 31;
         r.send(f);
       },
       {{RC_ACKNOWLEDGE, kNakAcc, false, 0}}, IBV_QPS_ERR, qpc(&TransportCounters::nak_sent)},
      {"write-dma-length-beyond-region", {},
       +[](Run& r) { r.send(r.write(RC_RDMA_WRITE_FIRST, 0, 0, r.pmtu(), uint32_t(kRwLen) + 4096)); },
       {{RC_ACKNOWLEDGE, kNakAcc, false, 0}}, IBV_QPS_ERR, qpc(&TransportCounters::nak_sent)},
      {"read-past-region-end", {}, +[](Run& r) { r.send(r.read(0, r.rw->va(kRwLen - 128), r.rw->key(), 256)); },
       {{RC_ACKNOWLEDGE, kNakAcc, false, 0}}, IBV_QPS_ERR, qpc(&TransportCounters::nak_sent)},
      {"atomic-past-region-end", {},
       +[](Run& r) { r.send(r.atomic(RC_FETCH_ADD, 0, r.rw->va(kRwLen), r.rw->key(), 1)); },
       {{RC_ACKNOWLEDGE, kNakAcc, false, 0}}, IBV_QPS_ERR, qpc(&TransportCounters::nak_sent)},
      {"write-across-psn-wrap", {},
       +[](Run& r) {
         const uint32_t m = r.pmtu();
         auto f = r.write(RC_RDMA_WRITE_FIRST, 0, 0, m, 3 * m);
         f.bth.ack_req = false;
         r.send(f);
         auto mid = r.req(RC_RDMA_WRITE_MIDDLE, 1, m);
         mid.bth.ack_req = false;
         r.send(mid);
         r.send(r.req(RC_RDMA_WRITE_LAST, 2, m));
       },
       {{RC_ACKNOWLEDGE, kAck, false, 2}}, IBV_QPS_RTS, qpc(&TransportCounters::rcvd_pkts, 3), 0, 3 * 4096, -1, 3,
       +[](Run& r) {
         CHECK(Run::E(2) == 0);
         for (size_t i = 0; i < 3 * r.pmtu(); ++i)
           if (r.rw->data()[i] != 0xEE) {
             FAIL_CHECK("rw byte " << i << " not written");
             break;
           }
       }},

      // --- keys, PDs, access flags
      {"rkey-unknown", {},
       +[](Run& r) {
         auto f = r.write(RC_RDMA_WRITE_ONLY, 0, 0, 64);
         f.ext.reth_rkey ^= 0x00A5A500;
         r.send(f);
       },
       {{RC_ACKNOWLEDGE, kNakAcc, false, 0}}, IBV_QPS_ERR, qpc(&TransportCounters::nak_sent)},
      {"rkey-of-another-pd", {},
       +[](Run& r) {
         auto f = r.write(RC_RDMA_WRITE_ONLY, 0, 0, 64);
         f.ext.reth_va = r.other->va();
         f.ext.reth_rkey = r.other->key();
         r.send(f);
       },
       {{RC_ACKNOWLEDGE, kNakAcc, false, 0}}, IBV_QPS_ERR, qpc(&TransportCounters::nak_sent),
       0, 0, -1, kNoProbe, +[](Run& r) { CHECK(r.other->changed_outside(0, 0) == -1); }},
      {"write-to-read-only-region", {},
       +[](Run& r) {
         auto f = r.write(RC_RDMA_WRITE_ONLY, 0, 0, 64);
         f.ext.reth_va = r.ro->va();
         f.ext.reth_rkey = r.ro->key();
         r.send(f);
       },
       {{RC_ACKNOWLEDGE, kNakAcc, false, 0}}, IBV_QPS_ERR, qpc(&TransportCounters::nak_sent),
       0, 0, -1, kNoProbe, +[](Run& r) { CHECK(r.ro->changed_outside(0, 0) == -1); }},
      {"read-from-region-without-remote-read", {}, +[](Run& r) { r.send(r.read(0, r.wo->va(), r.wo->key(), 64)); },
       {{RC_ACKNOWLEDGE, kNakAcc, false, 0}}, IBV_QPS_ERR, qpc(&TransportCounters::nak_sent)},
      {"atomic-on-region-without-remote-atomic", {},
       +[](Run& r) { r.send(r.atomic(RC_COMPARE_SWAP, 0, r.wo->va(), r.wo->key(), 1, 0)); },
       {{RC_ACKNOWLEDGE, kNakAcc, false, 0}}, IBV_QPS_ERR, qpc(&TransportCounters::nak_sent),
       0, 0, -1, kNoProbe, +[](Run& r) { CHECK(r.wo->changed_outside(0, 0) == -1); }},
      {"write-to-qp-without-remote-write", {.qp_access = kRcNoWrite},
       +[](Run& r) { r.send(r.write(RC_RDMA_WRITE_ONLY, 0, 0, 64)); },
       {{RC_ACKNOWLEDGE, kNakInv, false, 0}}, IBV_QPS_ERR, qpc(&TransportCounters::nak_sent)},
      {"atomic-to-qp-without-remote-atomic", {.qp_access = kRcNoAtomic},
       +[](Run& r) { r.send(r.atomic(RC_FETCH_ADD, 0, r.rw->va(), r.rw->key(), 1)); },
       {{RC_ACKNOWLEDGE, kNakInv, false, 0}}, IBV_QPS_ERR, qpc(&TransportCounters::nak_sent)},
      {"read-with-max-dest-rd-atomic-0", {.max_dest_rd_atomic = 0},
       +[](Run& r) { r.send(r.read(0, r.rw->va(), r.rw->key(), 64)); },
       {{RC_ACKNOWLEDGE, kNakInv, false, 0}}, IBV_QPS_ERR, qpc(&TransportCounters::nak_sent)},
      {"foreign-pkey", {},
       +[](Run& r) {
         auto f = r.write(RC_RDMA_WRITE_ONLY, 0, 0, 64);
         f.bth.pkey = 0x1234;
         r.send(f);
       },
       {}, IBV_QPS_RTS, dev(&DeviceCounters::rx_bad_pkey), 0, 0, -1, 0},
      {"limited-member-pkey-accepted", {},
       +[](Run& r) {
         auto f = r.write(RC_RDMA_WRITE_ONLY, 0, 0, 64);
         f.bth.pkey = 0x7FFF;
         r.send(f);
       },
       {{RC_ACKNOWLEDGE, kAck, false, 0}}, IBV_QPS_RTS, dev(&DeviceCounters::rx_bad_pkey, 0), 0, 64, 0xEE, 1},
      {"send-with-invalidate-of-a-region", {.recv_len = 4096},
       +[](Run& r) {
         auto f = r.req(RC_SEND_ONLY_WITH_INVALIDATE, 0, 64);
         f.ext.ieth_rkey = r.rw->key();
         r.send(f);
       },
       {{RC_ACKNOWLEDGE, kNakInv, false, 0}}, IBV_QPS_ERR, qpc(&TransportCounters::nak_sent), 0, 0, -1, kNoProbe,
       +[](Run& r) {
         expect_wc(r, IBV_WC_REM_INV_REQ_ERR, 500);
         CHECK(r.recv->changed_outside(0, 0) == -1);
       }},
      {"write-through-window-after-local-inv", {},
       +[](Run& r) {
         write_through_window(r);
         r.local_inv(r.mw_key);
         write_again_through_window(r, 1);
       },
       {{RC_ACKNOWLEDGE, kNakAcc, false, 1}}, IBV_QPS_ERR, qpc(&TransportCounters::nak_sent), 4096, 64, 0xEE},
      {"write-through-window-after-send-with-invalidate", {.recv_len = 4096},
       +[](Run& r) {
         write_through_window(r);
         auto inv = r.req(RC_SEND_ONLY_WITH_INVALIDATE, 1, 64);
         inv.ext.ieth_rkey = r.mw_key;
         inv.bth.ack_req = false;
         r.send(inv);
         write_again_through_window(r, 2);
       },
       {{RC_ACKNOWLEDGE, kNakAcc, false, 2}}, IBV_QPS_ERR, qpc(&TransportCounters::nak_sent), 4096, 64, 0xEE,
       kNoProbe,
       +[](Run& r) {
         const auto wcs = r.completions(1);
         REQUIRE(wcs.size() == 1);
         CHECK(wcs[0].wr_id == 500);
         CHECK(wcs[0].status == IBV_WC_SUCCESS);
         CHECK((wcs[0].wc_flags & IBV_WC_WITH_INV) != 0);
         CHECK(wcs[0].invalidated_rkey == r.mw_key);
       }},

      // --- PSN games
      {"psn-ahead", {}, +[](Run& r) { r.send(r.write(RC_RDMA_WRITE_ONLY, 5, 0, 64)); },
       {{RC_ACKNOWLEDGE, kNakSeq, false, 0}}, IBV_QPS_RTS, qpc(&TransportCounters::out_of_seq_request), 0, 0, -1, 0},
      {"psn-ahead-three-times-one-nak", {},
       +[](Run& r) {
         for (int32_t k = 5; k < 8; ++k) r.send(r.write(RC_RDMA_WRITE_ONLY, k, 0, 64));
       },
       {{RC_ACKNOWLEDGE, kNakSeq, false, 0}}, IBV_QPS_RTS, qpc(&TransportCounters::out_of_seq_request, 3), 0, 0, -1,
       0},
      {"psn-far-behind-is-a-duplicate", {},
       +[](Run& r) { r.send(r.write(RC_RDMA_WRITE_ONLY, -0x400000, 0, 64)); },
       {{RC_ACKNOWLEDGE, kAck, false, -1}}, IBV_QPS_RTS, qpc(&TransportCounters::duplicate_request), 0, 0, -1, 0},
      {"psn-half-window-away", {}, +[](Run& r) { r.send(r.write(RC_RDMA_WRITE_ONLY, 0x800000, 0, 64)); },
       {{RC_ACKNOWLEDGE, kAck, false, -1}}, IBV_QPS_RTS, qpc(&TransportCounters::duplicate_request), 0, 0, -1, 0},

      // --- duplicates and replays
      {"replayed-write-not-executed-again", {},
       +[](Run& r) {
         const auto f = r.write(RC_RDMA_WRITE_ONLY, 0, 0, 64);
         r.send(f);
         REQUIRE(r.rig.collect(1).size() == 1);
         r.rw->fill(0x11, 0, 64);  // the victim's application writes meanwhile
         r.send(f);
       },
       {{RC_ACKNOWLEDGE, kAck, false, 0}}, IBV_QPS_RTS, qpc(&TransportCounters::duplicate_request), 0, 64, 0x11, 1},
      {"replayed-atomic-answered-from-cache", {},
       +[](Run& r) {
         uint64_t v = 100;
         std::memcpy(r.rw->data(), &v, 8);
         const auto f = r.atomic(RC_FETCH_ADD, 0, r.rw->va(), r.rw->key(), 5);
         r.send(f);
         r.send(f);
       },
       {{RC_ATOMIC_ACKNOWLEDGE, kAck, false, 0, -1, 0, 100}, {RC_ATOMIC_ACKNOWLEDGE, kAck, false, 0, -1, 0, 100}},
       IBV_QPS_RTS, qpc(&TransportCounters::duplicate_request), 0, 8, -1, 1,
       +[](Run& r) {
         uint64_t v;
         std::memcpy(&v, r.rw->data(), 8);
         CHECK(v == 105);
       }},
      {"replayed-read-reads-again", {},
       +[](Run& r) {
         r.rw->fill(0x33, 0, 64);
         const auto f = r.read(0, r.rw->va(), r.rw->key(), 64);
         r.send(f);
         REQUIRE(r.rig.collect(1).size() == 1);
         r.rw->fill(0x22, 0, 64);
         r.send(f);
       },
       {{RC_RDMA_READ_RESPONSE_ONLY, kAck, false, 0, 0x22, 64}}, IBV_QPS_RTS,
       qpc(&TransportCounters::duplicate_request), 0, 64, 0x22, 1},
      {"replayed-read-naming-another-region", {},
       +[](Run& r) {
         r.rw->fill(0x33, 0, 64);
         r.other->fill(0x44);
         r.send(r.read(0, r.rw->va(), r.rw->key(), 64));
         r.send(r.read(0, r.other->va(), r.other->key(), 64));
       },
       {{RC_RDMA_READ_RESPONSE_ONLY, kAck, false, 0, 0x33, 64}, {RC_RDMA_READ_RESPONSE_ONLY, kAck, false, 0, 0x33, 64}},
       IBV_QPS_RTS, qpc(&TransportCounters::duplicate_request), 0, 64, 0x33, 1},
      {"duplicate-atomic-with-no-saved-result", {},
       +[](Run& r) {
         r.send(r.write(RC_RDMA_WRITE_ONLY, 0, 0, 64));
         r.send(r.atomic(RC_FETCH_ADD, 0, r.rw->va(64), r.rw->key(), 9));
       },
       {{RC_ACKNOWLEDGE, kAck, false, 0}}, IBV_QPS_RTS, qpc(&TransportCounters::duplicate_request), 0, 64, 0xEE, 1},
      {"duplicate-read-with-no-saved-request", {},
       +[](Run& r) {
         r.send(r.write(RC_RDMA_WRITE_ONLY, 0, 0, 64));
         r.send(r.read(0, r.rw->va(), r.rw->key(), 64));
       },
       {{RC_ACKNOWLEDGE, kAck, false, 0}}, IBV_QPS_RTS, qpc(&TransportCounters::duplicate_request), 0, 64, 0xEE, 1},

      // --- spoofed and foreign addresses
      {"source-ip-not-the-peer", {},
       +[](Run& r) { r.send(stranger(r.write(RC_RDMA_WRITE_ONLY, 0, 0, 64), r)); }, {}, IBV_QPS_RTS,
       dev(&DeviceCounters::rx_not_from_peer), 0, 0, -1, 0},
      {"destination-ip-not-ours", {},
       +[](Run& r) {
         auto f = r.write(RC_RDMA_WRITE_ONLY, 0, 0, 64);
         f.ip.dst = r.rig.stranger_ip;
         r.send(f);
       },
       {}, IBV_QPS_RTS, dev(&DeviceCounters::rx_other_ip), 0, 0, -1, 0},
      {"destination-mac-not-ours", {},
       +[](Run& r) {
         auto f = r.write(RC_RDMA_WRITE_ONLY, 0, 0, 64);
         f.eth.dst = wire::MacAddr{{0x02, 0, 0, 0, 0x77, 0x01}};
         r.send(f);
       },
       {}, IBV_QPS_RTS, dev(&DeviceCounters::rx_other_host), 0, 0, -1, 0},
      {"destination-mac-broadcast", {},
       +[](Run& r) {
         auto f = r.write(RC_RDMA_WRITE_ONLY, 0, 0, 64);
         f.eth.dst = wire::MacAddr{{0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF}};
         r.send(f);
       },
       {}, IBV_QPS_RTS, dev(&DeviceCounters::rx_other_host), 0, 0, -1, 0},
      {"destination-mac-group-not-joined", {},
       +[](Run& r) {
         auto f = r.write(RC_RDMA_WRITE_ONLY, 0, 0, 64);
         f.eth.dst = unjoined_group(r);
         r.send(f);
       },
       {}, IBV_QPS_RTS, dev(&DeviceCounters::rx_other_host), 0, 0, -1, 0},
      {"unknown-destination-qp", {},
       +[](Run& r) {
         auto f = r.write(RC_RDMA_WRITE_ONLY, 0, 0, 64);
         f.bth.dest_qp = 0xABCDEF;
         r.send(f);
       },
       {}, IBV_QPS_RTS, dev(&DeviceCounters::rx_unknown_qp), 0, 0, -1, 0},

      // --- malformed and truncated frames
      {"bad-icrc", {},
       +[](Run& r) {
         edit_and_send(r, r.write(RC_RDMA_WRITE_ONLY, 0, 0, 64),
                       +[](std::vector<uint8_t>& fr, const Offsets&) { fr[fr.size() - 1] ^= 0x01; });
       },
       {}, IBV_QPS_RTS, dev(&DeviceCounters::rx_icrc_err), 0, 0, -1, 0},
      {"wrong-udp-checksum", {},
       +[](Run& r) {
         wire::BuildOptions with_sum;
         with_sum.compute_udp_checksum = true;
         std::vector<uint8_t> fr = r.build(r.write(RC_RDMA_WRITE_ONLY, 0, 0, 64), 0xEE, with_sum);
         const Offsets o = offsets_of(fr);
         const uint16_t good = uint16_t(fr[o.l4 + 6] << 8 | fr[o.l4 + 7]);
         REQUIRE(good != 0);
         // Neither the right sum, nor 0 (no checksum), nor 0xFFFF-for-0.
         const uint16_t bad = (good ^ 0x0101) == 0 || (good ^ 0x0101) == 0xFFFF ? uint16_t(good ^ 0x0202)
                                                                                 : uint16_t(good ^ 0x0101);
         fr[o.l4 + 6] = uint8_t(bad >> 8);  // outside the ICRC (masked there)
         fr[o.l4 + 7] = uint8_t(bad);
         r.send_frame(fr);
       },
       {}, IBV_QPS_RTS, dev(&DeviceCounters::rx_udp_csum_err), 0, 0, -1, 0},
      {"truncated-frame", {},
       +[](Run& r) {
         edit_and_send(r, r.write(RC_RDMA_WRITE_ONLY, 0, 0, 64),
                       +[](std::vector<uint8_t>& fr, const Offsets&) { fr.resize(fr.size() - 20); });
       },
       {}, IBV_QPS_RTS, dev(&DeviceCounters::rx_invalid), 0, 0, -1, 0},
      {"headers-cut-inside-reth", {},
       +[](Run& r) {
         // A SEND_ONLY without payload relabelled WRITE_ONLY: its RETH is missing.
         edit_and_send(r, r.req(RC_SEND_ONLY, 0), +[](std::vector<uint8_t>& fr, const Offsets& o) {
           fr[o.bth] = RC_RDMA_WRITE_ONLY;
           reseal(fr);
         });
       },
       {}, IBV_QPS_RTS, dev(&DeviceCounters::rx_invalid), 0, 0, -1, 0},
      {"udp-length-beyond-ip-payload", {},
       +[](Run& r) {
         edit_and_send(r, r.write(RC_RDMA_WRITE_ONLY, 0, 0, 64), +[](std::vector<uint8_t>& fr, const Offsets& o) {
           fr[o.l4 + 5] = uint8_t(fr[o.l4 + 5] + 8);
         });
       },
       {}, IBV_QPS_RTS, dev(&DeviceCounters::rx_invalid), 0, 0, -1, 0},
      {"bad-ip-header", {},
       +[](Run& r) {
         // IPv4: a wrong header checksum; IPv6: version 5.
         edit_and_send(r, r.write(RC_RDMA_WRITE_ONLY, 0, 0, 64), +[](std::vector<uint8_t>& fr, const Offsets& o) {
           if (o.ipv6) fr[o.l3] = uint8_t((fr[o.l3] & 0x0F) | 0x50);
           else fr[o.l3 + 10] ^= 0x40;
         });
       },
       {}, IBV_QPS_RTS, dev(&DeviceCounters::rx_invalid), 0, 0, -1, 0},
      {"bth-transport-version-1", {},
       +[](Run& r) {
         edit_and_send(r, r.write(RC_RDMA_WRITE_ONLY, 0, 0, 64), +[](std::vector<uint8_t>& fr, const Offsets& o) {
           fr[o.bth + 1] = uint8_t((fr[o.bth + 1] & 0xF0) | 1);
           reseal(fr);
         });
       },
       {}, IBV_QPS_RTS, dev(&DeviceCounters::rx_invalid), 0, 0, -1, 0},
      {"reserved-opcode", {},
       +[](Run& r) {
         edit_and_send(r, r.write(RC_RDMA_WRITE_ONLY, 0, 0, 64), +[](std::vector<uint8_t>& fr, const Offsets& o) {
           fr[o.bth] = 0x1F;
           reseal(fr);
         });
       },
       {}, IBV_QPS_RTS, dev(&DeviceCounters::rx_invalid), 0, 0, -1, 0},
      {"cnp-with-payload", {},
       +[](Run& r) {
         std::vector<uint8_t> fr = r.build(r.req(CNP, 0));
         fr.insert(fr.end() - 4, 4, 0xEE);
         reseal(fr);
         r.send_frame(fr);
       },
       {}, IBV_QPS_RTS, dev(&DeviceCounters::rx_invalid), 0, 0, -1, 0},

      // --- opcode sequence violations
      {"write-middle-without-first", {}, +[](Run& r) { r.send(r.req(RC_RDMA_WRITE_MIDDLE, 0, r.pmtu())); },
       {{RC_ACKNOWLEDGE, kNakInv, false, 0}}, IBV_QPS_ERR, qpc(&TransportCounters::nak_sent)},
      {"send-last-without-first", {.recv_len = 8192}, +[](Run& r) { r.send(r.req(RC_SEND_LAST, 0, 64)); },
       {{RC_ACKNOWLEDGE, kNakInv, false, 0}}, IBV_QPS_ERR, qpc(&TransportCounters::nak_sent)},
      {"send-middle-inside-a-write", {},
       +[](Run& r) {
         auto f = r.write(RC_RDMA_WRITE_FIRST, 0, 0, r.pmtu(), 2 * r.pmtu());
         f.bth.ack_req = false;
         r.send(f);
         r.send(r.req(RC_SEND_MIDDLE, 1, r.pmtu()));
       },
       {{RC_ACKNOWLEDGE, kNakInv, false, 1}}, IBV_QPS_ERR, qpc(&TransportCounters::nak_sent), 0, 4096, -1},
      {"send-first-inside-a-send", {.recv_len = 8192},
       +[](Run& r) {
         auto f = r.req(RC_SEND_FIRST, 0, r.pmtu());
         f.bth.ack_req = false;
         r.send(f);
         f.bth.psn = Run::E(1);
         r.send(f);
       },
       {{RC_ACKNOWLEDGE, kNakInv, false, 1}}, IBV_QPS_ERR, qpc(&TransportCounters::nak_sent), 0, 0, -1, kNoProbe,
       +[](Run& r) { expect_wc(r, IBV_WC_REM_INV_REQ_ERR, 500); }},
      {"uc-opcode-to-rc-qp", {.recv_len = 4096}, +[](Run& r) {
         r.send(r.req(UC_SEND_ONLY, 0, 64));
         r.send(r.req(UC_SEND_ONLY, 5, 64));
       },
       {}, IBV_QPS_RTS, qpc(&TransportCounters::nak_sent, 0), 0, 0, -1, 0},
      {"ud-opcode-to-rc-qp", {.recv_len = 4096},
       +[](Run& r) {
         auto f = r.req(UD_SEND_ONLY, 0, 64);
         f.ext.deth_qkey = kQkey;
         f.ext.deth_src_qp = kAttackerQpn;
         r.send(f);
       },
       {}, IBV_QPS_RTS, qpc(&TransportCounters::nak_sent, 0), 0, 0, -1, 0},

      // --- RNR
      {"send-with-no-receive-posted", {}, +[](Run& r) { r.send(r.req(RC_SEND_ONLY, 0, 64)); },
       {{RC_ACKNOWLEDGE, kRnr1, false, 0}}, IBV_QPS_RTS, qpc(&TransportCounters::send_rnr_err), 0, 0, -1, 0},
      {"write-with-immediate-and-no-receive", {},
       +[](Run& r) { r.send(r.write(RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE, 0, 0, 64)); },
       {{RC_ACKNOWLEDGE, kRnr1, false, 0}}, IBV_QPS_RTS, qpc(&TransportCounters::send_rnr_err), 0, 0, -1, 0},
      {"rnr-nak-to-the-requester", {},
       +[](Run& r) {
         victim_writes(r);
         r.send(r.resp(RC_ACKNOWLEDGE, 0, 0x21));
       },
       {{RC_RDMA_WRITE_ONLY, -1, true, 0, 0x5A, 256}}, IBV_QPS_RTS, qpc(&TransportCounters::rcvd_rnr_err), 0, 0, -1,
       kNoProbe, genuine_ack_completes},
      {"rnr-nak-with-rnr-retry-0", {.rnr_retry = 0},
       +[](Run& r) {
         victim_writes(r);
         r.send(r.resp(RC_ACKNOWLEDGE, 0, 0x21));
       },
       {}, IBV_QPS_ERR, qpc(&TransportCounters::retry_rnr_exceeded_err), 0, 0, -1, kNoProbe,
       +[](Run& r) { expect_wc(r, IBV_WC_RNR_RETRY_EXC_ERR, 1); }},

      // --- ACK/NAK and CNP spoofing (the victim as requester)
      {"ack-for-a-psn-never-sent", {},
       +[](Run& r) {
         victim_writes(r);
         r.send(r.resp(RC_ACKNOWLEDGE, 100, kAck));
       },
       {}, IBV_QPS_RTS, qpc(&TransportCounters::rcvd_pkts, 0), 0, 0, -1, kNoProbe, genuine_ack_completes},
      {"ack-from-a-stranger", {},
       +[](Run& r) {
         victim_writes(r);
         r.send(stranger(r.resp(RC_ACKNOWLEDGE, 0, kAck), r));
       },
       {}, IBV_QPS_RTS, dev(&DeviceCounters::rx_not_from_peer), 0, 0, -1, kNoProbe, genuine_ack_completes},
      {"fatal-nak-from-a-stranger", {},
       +[](Run& r) {
         victim_writes(r);
         r.send(stranger(r.resp(RC_ACKNOWLEDGE, 0, kNakAcc), r));
       },
       {}, IBV_QPS_RTS, dev(&DeviceCounters::rx_not_from_peer), 0, 0, -1, kNoProbe, genuine_ack_completes},
      {"sequence-nak-makes-it-resend", {},
       +[](Run& r) {
         victim_writes(r);
         r.send(r.resp(RC_ACKNOWLEDGE, 0, kNakSeq));
       },
       {{RC_RDMA_WRITE_ONLY, -1, true, 0, 0x5A, 256}}, IBV_QPS_RTS, qpc(&TransportCounters::rcvd_seq_err), 0, 0, -1,
       kNoProbe, genuine_ack_completes},
      {"stale-fatal-nak", {},
       +[](Run& r) {
         victim_writes(r);
         r.send(r.resp(RC_ACKNOWLEDGE, -10, kNakAcc));
       },
       {}, IBV_QPS_RTS, qpc(&TransportCounters::rcvd_nak, 0), 0, 0, -1, kNoProbe, genuine_ack_completes},
      {"read-response-longer-than-asked", {},
       +[](Run& r) {
         r.post_read(64);
         r.take_request(RC_RDMA_READ_REQUEST, Run::S(0));
         r.send(r.resp(RC_RDMA_READ_RESPONSE_ONLY, 0, kAck, 128), 0x99);
       },
       {}, IBV_QPS_ERR, qpc(&TransportCounters::rcvd_pkts), 0, 0, -1, kNoProbe,
       +[](Run& r) {
         expect_wc(r, IBV_WC_BAD_RESP_ERR, 1);
         CHECK(r.local->changed_outside(0, 0) == -1);
       }},
      {"read-response-to-a-write", {},
       +[](Run& r) {
         victim_writes(r);
         r.send(r.resp(RC_RDMA_READ_RESPONSE_ONLY, 0, kAck, 256), 0x99);
       },
       {}, IBV_QPS_RTS, qpc(&TransportCounters::rcvd_pkts), 0, 0, -1, kNoProbe, genuine_ack_completes},
      {"cnp-from-a-stranger", {},
       +[](Run& r) { r.send(stranger(r.req(CNP, 0), r)); }, {}, IBV_QPS_RTS,
       dev(&DeviceCounters::rx_not_from_peer), 0, 0, -1, 0},
      {"cnp-from-the-peer-without-dcqcn", {}, +[](Run& r) { r.send(r.req(CNP, 0)); }, {}, IBV_QPS_RTS,
       qpc(&TransportCounters::nak_sent, 0), 0, 0, -1, 0,
       +[](Run& r) { CHECK(r.qp->cc_stats().cnps_received == 1); }},

      // --- oversize and undersize payloads
      {"write-only-over-the-path-mtu", {},
       +[](Run& r) { r.send(r.write(RC_RDMA_WRITE_ONLY, 0, 0, r.pmtu() + 64)); },
       {{RC_ACKNOWLEDGE, kNakInv, false, 0}}, IBV_QPS_ERR, qpc(&TransportCounters::nak_sent)},
      {"write-first-under-the-path-mtu", {},
       +[](Run& r) { r.send(r.write(RC_RDMA_WRITE_FIRST, 0, 0, r.pmtu() - 64, 2 * r.pmtu())); },
       {{RC_ACKNOWLEDGE, kNakInv, false, 0}}, IBV_QPS_ERR, qpc(&TransportCounters::nak_sent)},
      {"write-middle-over-the-path-mtu", {},
       +[](Run& r) { first_then_middle(r, RC_RDMA_WRITE_FIRST, RC_RDMA_WRITE_MIDDLE, r.pmtu() + 64); },
       {{RC_ACKNOWLEDGE, kNakInv, false, 1}}, IBV_QPS_ERR, qpc(&TransportCounters::nak_sent), 0, 4096, -1, kNoProbe,
       +[](Run& r) { only_the_first_landed(r, *r.rw); }},
      {"write-middle-under-the-path-mtu", {},
       +[](Run& r) { first_then_middle(r, RC_RDMA_WRITE_FIRST, RC_RDMA_WRITE_MIDDLE, r.pmtu() - 64); },
       {{RC_ACKNOWLEDGE, kNakInv, false, 1}}, IBV_QPS_ERR, qpc(&TransportCounters::nak_sent), 0, 4096, -1, kNoProbe,
       +[](Run& r) { only_the_first_landed(r, *r.rw); }},
      {"send-middle-over-the-path-mtu", {.recv_len = 8192},
       +[](Run& r) { first_then_middle(r, RC_SEND_FIRST, RC_SEND_MIDDLE, r.pmtu() + 64); },
       {{RC_ACKNOWLEDGE, kNakInv, false, 1}}, IBV_QPS_ERR, qpc(&TransportCounters::nak_sent), 0, 0, -1, kNoProbe,
       +[](Run& r) {
         expect_wc(r, IBV_WC_REM_INV_REQ_ERR, 500);
         only_the_first_landed(r, *r.recv);
       }},
      {"write-only-payload-shorter-than-reth", {},
       +[](Run& r) { r.send(r.write(RC_RDMA_WRITE_ONLY, 0, 0, 64, 100)); },
       {{RC_ACKNOWLEDGE, kNakInv, false, 0}}, IBV_QPS_ERR, qpc(&TransportCounters::nak_sent)},
      {"send-longer-than-the-receive", {.recv_len = 128}, +[](Run& r) { r.send(r.req(RC_SEND_ONLY, 0, 512)); },
       {{RC_ACKNOWLEDGE, kNakInv, false, 0}}, IBV_QPS_ERR, qpc(&TransportCounters::nak_sent), 0, 0, -1, kNoProbe,
       +[](Run& r) {
         expect_wc(r, IBV_WC_LOC_LEN_ERR, 500);
         CHECK(r.recv->changed_outside(0, 0) == -1);
       }},
      {"zero-length-write-with-bogus-key", {},
       +[](Run& r) {
         auto f = r.write(RC_RDMA_WRITE_ONLY, 0, 0, 0);
         f.ext.reth_va = 0xDEAD0000;
         f.ext.reth_rkey = 0xBAD;
         r.send(f);
       },
       {{RC_ACKNOWLEDGE, kAck, false, 0}}, IBV_QPS_RTS, qpc(&TransportCounters::nak_sent, 0), 0, 0, -1, 1},
      {"send-last-with-no-payload", {.recv_len = 8192},
       +[](Run& r) {
         auto f = r.req(RC_SEND_FIRST, 0, r.pmtu());
         f.bth.ack_req = false;
         r.send(f);
         r.send(r.req(RC_SEND_LAST, 1, 0));
       },
       {{RC_ACKNOWLEDGE, kNakInv, false, 1}}, IBV_QPS_ERR, qpc(&TransportCounters::nak_sent), 0, 0, -1, kNoProbe,
       +[](Run& r) { expect_wc(r, IBV_WC_REM_INV_REQ_ERR, 500); }},
      {"read-longer-than-2^31", {}, +[](Run& r) { r.send(r.read(0, r.rw->va(), r.rw->key(), 0x80000008u)); },
       {{RC_ACKNOWLEDGE, kNakInv, false, 0}}, IBV_QPS_ERR, qpc(&TransportCounters::nak_sent)},
      {"misaligned-atomic", {}, +[](Run& r) { r.send(r.atomic(RC_FETCH_ADD, 0, r.rw->va(4), r.rw->key(), 1)); },
       {{RC_ACKNOWLEDGE, kNakInv, false, 0}}, IBV_QPS_ERR, qpc(&TransportCounters::nak_sent)},

      // --- other transports
      {"uc-write-with-unknown-rkey", {.type = IBV_QPT_UC},
       +[](Run& r) {
         auto f = r.write(UC_RDMA_WRITE_ONLY, 0, 0, 64);
         f.ext.reth_rkey ^= 0x00A5A500;
         f.bth.ack_req = false;
         r.send(f);
       },
       {}, IBV_QPS_RTS, qpc(&TransportCounters::uc_msg_dropped)},
      {"ud-send-with-wrong-qkey", {.type = IBV_QPT_UD, .recv_len = 4096},
       +[](Run& r) {
         auto f = r.req(UD_SEND_ONLY, 0, 64);
         f.bth.ack_req = false;
         f.ext.deth_qkey = kQkey ^ 1;
         f.ext.deth_src_qp = kAttackerQpn;
         r.send(f);
       },
       {}, IBV_QPS_RTS, qpc(&TransportCounters::rdma_recvs, 0), 0, 0, -1, kNoProbe,
       +[](Run& r) {
         no_wc(r);
         CHECK(r.recv->changed_outside(0, 0) == -1);
       }},
  };
  return t;
}

uint64_t read_count(Run& r, const Count& c) {
  if (c.dev) return r.rig.dev->counters().*c.dev;
  if (c.qp) return r.qp->counters().*c.qp;
  return 0;
}

void check_reply(Run& r, const Frame& got, const Want& w) {
  CHECK(int(got.opcode()) == int(w.opcode));
  CHECK(got.psn() == (w.sq ? Run::S(w.psn) : Run::E(w.psn)));
  CHECK(got.v.bth().dest_qp() == kAttackerQpn);
  if (w.syndrome >= 0) CHECK(int(got.syndrome()) == w.syndrome);
  if (w.fill >= 0) {
    CHECK(got.v.payload_len == w.len);
    for (uint32_t i = 0; i < got.v.payload_len; ++i)
      if (got.v.payload[i] != uint8_t(w.fill)) {
        FAIL_CHECK("payload byte " << i << " is " << int(got.v.payload[i]) << ", not " << w.fill);
        break;
      }
  }
  if (w.orig >= 0) CHECK(got.v.atomic_ack().orig() == uint64_t(w.orig));
  (void)r;
}

void run_class(Rig& rig, const AttackClass& c) {
  INFO("class " << c.id << " (" << rig.cfg.label() << ")");
  Run r(rig, c.setup);
  r.local->fill(0x5A);
  for (GuardedRegion* g : {r.rw.get(), r.ro.get(), r.wo.get(), r.other.get(), r.recv.get(), r.local.get()})
    g->snapshot();
  const uint64_t rx_before = rig.dev->counters().rx_frames;
  const uint64_t count_before = read_count(r, c.count);
  const uint64_t zc_before = r.qp->counters().zero_copy_pkts;

  c.attack(r);
  rig.wait_rx(rx_before, r.sent);
  const std::vector<Frame> got = rig.collect(c.replies.size());
  INFO("replies: " << got.size());
  CHECK(got.size() == c.replies.size());
  for (size_t i = 0; i < std::min(got.size(), c.replies.size()); ++i) {
    INFO("reply " << i);
    check_reply(r, got[i], c.replies[i]);
  }
  CHECK(r.qp->state() == c.state);
  if (c.count.dev || c.count.qp) CHECK(read_count(r, c.count) - count_before == c.count.delta);
  // The victim's WRITEs go out of `local` without a copy when asked to.
  if (rig.cfg.zero_copy && !c.replies.empty() && c.replies[0].sq && c.replies[0].opcode == RC_RDMA_WRITE_ONLY)
    CHECK(r.qp->counters().zero_copy_pkts > zc_before);
  if (!rig.cfg.zero_copy) CHECK(r.qp->counters().zero_copy_pkts == 0);

  CHECK(r.rw->changed_outside(c.mem_off, c.mem_len) == -1);
  if (c.mem_fill >= 0)
    for (size_t i = c.mem_off; i < c.mem_off + c.mem_len && i < kRwLen; ++i)
      if (r.rw->data()[i] != uint8_t(c.mem_fill)) {
        FAIL_CHECK("rw byte " << i << " is " << int(r.rw->data()[i]) << ", not " << c.mem_fill);
        break;
      }
  if (c.after) c.after(r);
  if (c.probe != kNoProbe && c.setup.type == IBV_QPT_RC) r.probe(c.probe);
  for (GuardedRegion* g : {r.rw.get(), r.ro.get(), r.wo.get(), r.other.get(), r.recv.get(), r.local.get()})
    CHECK(g->canary_damage() == -1);
}

}  // namespace

TEST_CASE("Attack classes: the victim answers as rxe would and its memory holds", "[attack]") {
  REQUIRE(classes().size() >= 30);
  for (bool v6 : {false, true})
    for (ibv_mtu mtu : {IBV_MTU_1024, IBV_MTU_4096})
      for (bool threaded : {false, true})
        for (uint16_t seg : {uint16_t(0), uint16_t(50)})
          for (bool zc : {false, true}) {
            const RigConfig cfg{v6, mtu, threaded, seg, zc};
            DYNAMIC_SECTION(cfg.label()) {
              Rig rig(cfg);
              const uint64_t gathered = rig.dev->counters().rx_gathered;
              for (const AttackClass& c : classes()) run_class(rig, c);
              // Segmented frames reached the handlers gathered.
              if (seg) CHECK(rig.dev->counters().rx_gathered > gathered);
            }
          }
}

}  // namespace uroce::attack

namespace uroce::attack {

TEST_CASE("Attack rig: canaries, snapshots and resealed frames are checked for real", "[attack-selftest]") {
  Rig rig(RigConfig{});
  Run r(rig, Setup{});
  GuardedRegion& g = *r.rw;
  CHECK(g.canary_damage() == -1);
  g.data()[-1] ^= 1;  // the byte before the region
  CHECK(g.canary_damage() != -1);
  g.data()[-1] ^= 1;
  g.data()[g.size()] ^= 1;  // the byte after it
  CHECK(g.canary_damage() != -1);
  g.data()[g.size()] ^= 1;
  CHECK(g.canary_damage() == -1);
  g.snapshot();
  g.data()[100] ^= 1;
  CHECK(g.changed_outside(0, 0) == 100);
  CHECK(g.changed_outside(100, 1) == -1);

  // An edited frame fails its ICRC until resealed.
  std::vector<uint8_t> fr = r.build(r.write(wire::op::RC_RDMA_WRITE_ONLY, 0, 0, 64));
  wire::PacketView v;
  REQUIRE(wire::parse_frame(fr, v) == wire::ParseError::ok);
  fr[fr.size() - 10] ^= 0xFF;
  CHECK(wire::parse_frame(fr, v) == wire::ParseError::icrc);
  reseal(fr);
  CHECK(wire::parse_frame(fr, v) == wire::ParseError::ok);
  // A payload over 4096 bytes is grown by build() and parses with its length.
  fr = r.build(r.write(wire::op::RC_RDMA_WRITE_ONLY, 0, 0, 4160));
  wire::ParseOptions o;
  o.allow_long_payload = true;
  REQUIRE(wire::parse_frame(fr, v, o) == wire::ParseError::ok);
  CHECK(v.payload_len == 4160);
}

}  // namespace uroce::attack
