// SPDX-License-Identifier: BSD-3-Clause
// libFuzzer target for the engine: the whole receive path, transport and
// timers of two devices (engine_rig.h) under a sequence of steps decoded
// from the input:
//  * a frame injected from a third port, built from structured fields:
//    an opcode from the table, the QPN of a real QP or one near it, a PSN
//    near the one the QP expects (or, for responses, near what it sent),
//    keys near real ones (and the deregistered and foreign-PD ones, and
//    the memory windows' keys),
//    addresses near a region's ends, lengths near the region's size and
//    the path MTU; the ICRC always right. Sometimes bytes are flipped
//    after building, then the IPv4 checksum and the ICRC redone; sometimes
//    it arrives in mbuf segments;
//  * virtual time going by (timers fire), a frame lost on the wire;
//  * posts of sends (window binds and local invalidations among them) and
//    receives, modifies (ERR, RESET, reconnect, SQD), polls of the CQs.
// After every step and at the end of the input the rig checks what must
// always hold; ASan and UBSan watch everything else.
#include <fuzzer/FuzzedDataProvider.h>
#include <rte_eal.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <string>
#include <vector>

#include "engine_rig.h"
#include "transport/qp.h"
#include "uroce/wire/builder.h"
#include "uroce/wire/byte_order.h"
#include "uroce/wire/ipv4.h"
#include "uroce/wire/opcode.h"
#include "uroce/wire/parser.h"
#include "verbs/access.h"

using namespace uroce;
using namespace uroce::fuzz;
namespace op = uroce::wire::op;

namespace {

constexpr size_t kMaxSteps = 48;
// UROCE_FUZZ_TRACE=1 prints each step (for replaying one input).
const bool kTrace = std::getenv("UROCE_FUZZ_TRACE") != nullptr;

constexpr uint8_t kOpcodes[] = {
    op::RC_SEND_FIRST, op::RC_SEND_MIDDLE, op::RC_SEND_LAST, op::RC_SEND_LAST_WITH_IMMEDIATE, op::RC_SEND_ONLY,
    op::RC_SEND_ONLY_WITH_IMMEDIATE, op::RC_RDMA_WRITE_FIRST, op::RC_RDMA_WRITE_MIDDLE, op::RC_RDMA_WRITE_LAST,
    op::RC_RDMA_WRITE_LAST_WITH_IMMEDIATE, op::RC_RDMA_WRITE_ONLY, op::RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE,
    op::RC_RDMA_READ_REQUEST, op::RC_RDMA_READ_RESPONSE_FIRST, op::RC_RDMA_READ_RESPONSE_MIDDLE,
    op::RC_RDMA_READ_RESPONSE_LAST, op::RC_RDMA_READ_RESPONSE_ONLY, op::RC_ACKNOWLEDGE, op::RC_ATOMIC_ACKNOWLEDGE,
    op::RC_COMPARE_SWAP, op::RC_FETCH_ADD, op::RC_SEND_LAST_WITH_INVALIDATE, op::RC_SEND_ONLY_WITH_INVALIDATE,
    op::UC_SEND_FIRST, op::UC_SEND_MIDDLE, op::UC_SEND_LAST, op::UC_SEND_LAST_WITH_IMMEDIATE, op::UC_SEND_ONLY,
    op::UC_SEND_ONLY_WITH_IMMEDIATE, op::UC_RDMA_WRITE_FIRST, op::UC_RDMA_WRITE_MIDDLE, op::UC_RDMA_WRITE_LAST,
    op::UC_RDMA_WRITE_LAST_WITH_IMMEDIATE, op::UC_RDMA_WRITE_ONLY, op::UC_RDMA_WRITE_ONLY_WITH_IMMEDIATE,
    op::UD_SEND_ONLY, op::UD_SEND_ONLY_WITH_IMMEDIATE, op::CNP};

// AETH syndromes: ACK (credits), RNR NAK (timer), PSN sequence error,
// invalid request, remote access, remote operational, invalid RD request.
constexpr uint8_t kSyndromes[] = {0x00, 0x1F, 0x01, 0x20, 0x21, 0x3F, 0x60, 0x61, 0x62, 0x63, 0x64, 0x40, 0x7F};

uint32_t pmtu_bytes(ibv_mtu m) { return 128u << unsigned(m); }

int pick_side(FuzzedDataProvider& in) { return in.ConsumeBool() ? 1 : 0; }
int pick_qp(FuzzedDataProvider& in) { return in.ConsumeIntegralInRange<int>(0, int(kQpSpecs.size()) - 1); }

// A value near `base`: equal most often, else a small signed step, rarely anything.
template <class T>
T near(FuzzedDataProvider& in, T base) {
  switch (in.ConsumeIntegralInRange<int>(0, 7)) {
    case 0: case 1: case 2: return base;
    case 3: case 4: return T(base + T(in.ConsumeIntegralInRange<int>(-4, 4)));
    case 5: return T(base + T(in.ConsumeIntegralInRange<int>(-300, 300)));
    case 6: return T(base - T(1));
    default: return in.ConsumeIntegral<T>();
  }
}

struct Target {
  uint64_t va;
  uint32_t key;
  uint64_t len;
};

// An address and key into a region of side s, near one of its ends; or
// into the range of one of its memory windows, with the window's key.
Target pick_target(FuzzedDataProvider& in, EngineRig& rig, int s) {
  Side& d = rig.side(s);
  const int r = in.ConsumeIntegralInRange<int>(0, kRegions + 1);
  uint64_t base, len;
  Target t;
  if (r < kRegions) {
    base = reinterpret_cast<uintptr_t>(d.buf[r]->data());
    len = d.buf[r]->size();
    t.key = near(in, d.key[r]);
  } else if (r == kRegions) {  // the window bound at the start of the input
    base = reinterpret_cast<uintptr_t>(d.buf[kRw]->data()) + kWindowOff;
    len = kWindowLen;
    t.key = near(in, d.mw_key[0]);
  } else {  // the second PD's window, never bound by the rig
    base = reinterpret_cast<uintptr_t>(d.buf[kOtherPd]->data());
    len = d.buf[kOtherPd]->size();
    t.key = near(in, d.mw_key[1]);
  }
  t.len = len;
  switch (in.ConsumeIntegralInRange<int>(0, 3)) {
    case 0: t.va = base; break;
    case 1: t.va = base + len; break;  // one past the end
    case 2: t.va = base + in.ConsumeIntegralInRange<uint64_t>(0, len); break;
    default: t.va = near(in, base + len / 2); break;
  }
  t.va = near(in, t.va);
  return t;
}

uint32_t pick_length(FuzzedDataProvider& in, uint32_t pmtu, uint64_t region_len) {
  switch (in.ConsumeIntegralInRange<int>(0, 6)) {
    case 0: return 0;
    case 1: return near(in, pmtu);
    case 2: return near(in, uint32_t(region_len));
    case 3: return near(in, 2 * pmtu);
    case 4: return in.ConsumeIntegralInRange<uint32_t>(1, 64);
    case 5: return in.ConsumeIntegralInRange<uint32_t>(0, 5 * pmtu);
    default: return in.ConsumeIntegral<uint32_t>();
  }
}

// The PSN a frame to this QP would carry: requests near what its responder
// expects, responses near what its requester sent.
uint32_t pick_psn(FuzzedDataProvider& in, const QpRec& r, uint8_t opcode) {
  const transport::Qp& q = detail::to_qp(*r.qp);
  const auto& info = wire::opcode_info(opcode);
  uint32_t base = q.resp.epsn;
  if (info.valid() && (info.has(wire::opf::response) || info.has(wire::opf::ack))) {
    switch (in.ConsumeIntegralInRange<int>(0, 2)) {
      case 0: base = q.comp.una; break;
      case 1: base = q.req.psn - 1; break;
      default: base = q.req.max_psn - 1; break;
    }
  }
  return near(in, base) & 0xFFFFFF;
}

wire::PacketFields build_fields(FuzzedDataProvider& in, EngineRig& rig, int s, const QpRec& r) {
  const int from = r.peer_side;
  Device& dst = *rig.side(s).dev;
  Device& src = *rig.side(from).dev;
  wire::PacketFields f;
  const uint8_t g = in.ConsumeIntegralInRange<uint8_t>(0, 7) == 0 ? uint8_t(1 - r.spec.sgid) : r.spec.sgid;
  f.eth.dst = rig.fabric().port(size_t(s)).mac();
  f.eth.src = in.ConsumeBool() ? rig.fabric().port(size_t(from)).mac() : rig.injector().mac();
  f.eth.has_vlan = in.ConsumeIntegralInRange<int>(0, 7) == 0;
  f.eth.vlan_tci = in.ConsumeIntegral<uint16_t>();
  f.ip.ipv6 = g == 1;
  f.ip.src = src.gids()[g];
  f.ip.dst = dst.gids()[g];
  if (in.ConsumeIntegralInRange<int>(0, 15) == 0) f.ip.src = rig.side(s == from ? 1 - s : s).dev->gids()[g];
  f.ip.ecn = in.ConsumeIntegralInRange<uint8_t>(0, 3);
  const bool raw_opcode = in.ConsumeIntegralInRange<int>(0, 15) == 0;
  f.bth.opcode = raw_opcode ? in.ConsumeIntegral<uint8_t>() : kOpcodes[in.ConsumeIntegralInRange<size_t>(0, sizeof kOpcodes - 1)];
  f.bth.se = in.ConsumeBool();
  f.bth.ack_req = in.ConsumeBool();
  f.bth.fecn = in.ConsumeIntegralInRange<int>(0, 7) == 0;
  f.bth.becn = in.ConsumeIntegralInRange<int>(0, 7) == 0;
  f.bth.migreq = in.ConsumeIntegralInRange<int>(0, 7) == 0;
  if (in.ConsumeIntegralInRange<int>(0, 15) == 0) f.bth.pkey = in.ConsumeIntegral<uint16_t>();
  f.bth.dest_qp = near(in, r.qp->qp_num()) & 0xFFFFFF;
  f.bth.psn = pick_psn(in, r, f.bth.opcode);
  const uint32_t pmtu = pmtu_bytes(r.spec.mtu);
  const Target t = pick_target(in, rig, s);
  f.ext.reth_va = t.va;
  f.ext.reth_rkey = t.key;
  f.ext.reth_dma_len = pick_length(in, pmtu, t.len);
  f.ext.aeth_syndrome =
      in.ConsumeBool() ? kSyndromes[in.ConsumeIntegralInRange<size_t>(0, sizeof kSyndromes - 1)] : in.ConsumeIntegral<uint8_t>();
  f.ext.aeth_msn = near(in, detail::to_qp(*r.qp).resp.msn) & 0xFFFFFF;
  const Target a = pick_target(in, rig, s);
  f.ext.atomic_va = in.ConsumeBool() ? a.va & ~uint64_t(7) : a.va;
  f.ext.atomic_rkey = a.key;
  f.ext.atomic_swap_add = in.ConsumeIntegral<uint64_t>();
  f.ext.atomic_compare = in.ConsumeBool() ? 0 : in.ConsumeIntegral<uint64_t>();
  f.ext.atomic_ack_orig = in.ConsumeIntegral<uint64_t>();
  f.ext.imm = in.ConsumeIntegral<uint32_t>();
  f.ext.ieth_rkey = pick_target(in, rig, s).key;
  f.ext.deth_qkey = near(in, kQkey);
  f.ext.deth_src_qp = near(in, rig.side(from).qps[size_t(r.peer_index)].qp->qp_num()) & 0xFFFFFF;
  const auto& info = wire::opcode_info(f.bth.opcode);
  f.payload_len = info.valid() && info.has(wire::opf::payload) ? pick_length(in, pmtu, t.len) % 4097 : 0;
  return f;
}

// Flips bytes, then makes the frame whole again where it still parses:
// IPv4 header checksum and ICRC redone, so the engine sees the change.
void mutate(FuzzedDataProvider& in, std::vector<uint8_t>& frame, const wire::FrameLayout& lay) {
  const int flips = in.ConsumeIntegralInRange<int>(1, 4);
  for (int i = 0; i < flips; ++i) frame[in.ConsumeIntegralInRange<size_t>(0, frame.size() - 1)] ^= in.ConsumeIntegral<uint8_t>();
  if (in.ConsumeIntegralInRange<int>(0, 3) == 0) return;  // as damaged
  if (!lay.ipv6 && lay.l4_off > lay.l3_off + 10 && lay.l4_off <= frame.size()) {
    uint8_t* ip = frame.data() + lay.l3_off;
    ip[10] = ip[11] = 0;
    const uint16_t sum = wire::ipv4_header_checksum(ip, lay.l4_off - lay.l3_off);
    ip[10] = uint8_t(sum >> 8);
    ip[11] = uint8_t(sum);
  }
  wire::PacketView v;
  wire::ParseOptions o;
  o.allow_long_payload = true;
  if (wire::parse_frame(frame, v, o) == wire::ParseError::icrc) wire::store_le32(frame.data() + v.end_off - 4, v.icrc_calc);
}

void inject_frame(FuzzedDataProvider& in, EngineRig& rig, bool damage) {
  const int s = pick_side(in);
  const QpRec& r = rig.side(s).qps[size_t(pick_qp(in))];
  wire::PacketFields f = build_fields(in, rig, s, r);
  std::vector<uint8_t> payload = in.ConsumeBytes<uint8_t>(f.payload_len);
  payload.resize(f.payload_len, 0x5A);
  std::vector<uint8_t> frame(f.payload_len + 256);
  wire::FrameLayout lay;
  if (wire::build_frame(f, payload, frame, lay) != wire::BuildError::ok) return;
  frame.resize(lay.frame_len);
  if (kTrace)
    std::fprintf(stderr, "  frame to side %d QP %d: opcode 0x%02x qpn 0x%x psn 0x%x payload %u reth va 0x%llx key 0x%x len %u aeth 0x%02x\n",
                 s, r.index, f.bth.opcode, f.bth.dest_qp, f.bth.psn, f.payload_len, (unsigned long long)f.ext.reth_va,
                 f.ext.reth_rkey, f.ext.reth_dma_len, f.ext.aeth_syndrome);
  if (damage) mutate(in, frame, lay);
  const uint16_t seg = in.ConsumeIntegralInRange<int>(0, 3) == 0 ? in.ConsumeIntegralInRange<uint16_t>(32, 1500) : 0;
  rig.inject(frame.data(), frame.size(), seg);
}

void fill_sge(FuzzedDataProvider& in, EngineRig& rig, int s, ibv_sge& sge, uint32_t pmtu) {
  const Target t = pick_target(in, rig, s);
  sge.addr = t.va;
  sge.lkey = t.key;
  sge.length = pick_length(in, pmtu, t.len) % (1u << 16);
}

// Inline data is read from the caller's memory at post time, with no key
// check (the caller vouches for it): inside one of the buffers, or empty.
void fill_inline_sge(FuzzedDataProvider& in, EngineRig& rig, int s, ibv_sge& sge) {
  const GuardedBuffer& b = *rig.side(s).buf[in.ConsumeIntegralInRange<int>(0, kRegions - 1)];
  const size_t off = in.ConsumeIntegralInRange<size_t>(0, b.size());
  sge.addr = in.ConsumeIntegralInRange<int>(0, 7) == 0 ? 0 : reinterpret_cast<uintptr_t>(b.data()) + off;
  sge.length = sge.addr == 0 ? 0 : in.ConsumeIntegralInRange<uint32_t>(0, uint32_t(std::min<size_t>(b.size() - off, 128)));
  sge.lkey = in.ConsumeIntegral<uint32_t>();
}

// A BIND_MW of one of the side's windows (or none) with a key near the
// window's or any consumer byte, over a range near a region's (any region,
// the deregistered one and the other PD's too), with rights that are
// mostly the remote ones.
void fill_bind(FuzzedDataProvider& in, EngineRig& rig, int s, uint32_t pmtu, SendWr& wr) {
  Side& d = rig.side(s);
  const int w = in.ConsumeIntegralInRange<int>(0, 2);
  wr.bind_mw.mw = w < 2 ? d.mw[size_t(w)].get() : nullptr;
  const uint32_t key = w < 2 ? d.mw_key[size_t(w)] : in.ConsumeIntegral<uint32_t>();
  wr.bind_mw.rkey = in.ConsumeBool() ? (key & ~0xFFu) | in.ConsumeIntegral<uint8_t>() : near(in, key);
  const int r = in.ConsumeIntegralInRange<int>(0, kRegions - 1);
  wr.bind_mw.bind_info.mr = d.mr[r].get();
  const uint64_t base = reinterpret_cast<uintptr_t>(d.buf[r]->data());
  const uint64_t len = d.buf[r]->size();
  switch (in.ConsumeIntegralInRange<int>(0, 3)) {
    case 0: wr.bind_mw.bind_info.addr = near(in, base); break;
    case 1: wr.bind_mw.bind_info.addr = near(in, base + len / 2); break;
    case 2: wr.bind_mw.bind_info.addr = near(in, base + len); break;
    default: wr.bind_mw.bind_info.addr = base + in.ConsumeIntegralInRange<uint64_t>(0, len); break;
  }
  wr.bind_mw.bind_info.length = in.ConsumeIntegralInRange<int>(0, 7) == 0 ? in.ConsumeIntegral<uint64_t>()
                                                                          : pick_length(in, pmtu, len);
  static constexpr unsigned kRemote[] = {IBV_ACCESS_REMOTE_READ, IBV_ACCESS_REMOTE_WRITE, IBV_ACCESS_REMOTE_ATOMIC};
  unsigned access = 0;
  for (unsigned a : kRemote)
    if (in.ConsumeBool()) access |= a;
  if (in.ConsumeIntegralInRange<int>(0, 7) == 0) access = in.ConsumeIntegral<unsigned>();
  wr.bind_mw.bind_info.mw_access_flags = access;
}

void post_send(FuzzedDataProvider& in, EngineRig& rig) {
  const int s = pick_side(in);
  const int q = pick_qp(in);
  const QpRec& r = rig.side(s).qps[size_t(q)];
  static constexpr ibv_wr_opcode kOps[] = {IBV_WR_SEND, IBV_WR_SEND_WITH_IMM, IBV_WR_RDMA_WRITE,
                                           IBV_WR_RDMA_WRITE_WITH_IMM, IBV_WR_RDMA_READ, IBV_WR_ATOMIC_CMP_AND_SWP,
                                           IBV_WR_ATOMIC_FETCH_AND_ADD, IBV_WR_SEND_WITH_INV,
                                           IBV_WR_BIND_MW, IBV_WR_LOCAL_INV};
  ibv_sge sge[3]{};
  SendWr wr;
  wr.opcode = kOps[in.ConsumeIntegralInRange<size_t>(0, std::size(kOps) - 1)];
  wr.num_sge = in.ConsumeIntegralInRange<int>(0, 3);
  const uint32_t pmtu = pmtu_bytes(r.spec.mtu);
  if (in.ConsumeIntegralInRange<int>(0, 3) == 0) wr.send_flags |= IBV_SEND_INLINE;
  for (int i = 0; i < wr.num_sge; ++i) {
    if (wr.send_flags & IBV_SEND_INLINE) fill_inline_sge(in, rig, s, sge[i]);
    else fill_sge(in, rig, s, sge[i], pmtu);
  }
  wr.sg_list = sge;
  if (in.ConsumeBool()) wr.send_flags |= IBV_SEND_SOLICITED;
  if (in.ConsumeIntegralInRange<int>(0, 3) == 0) wr.send_flags |= IBV_SEND_FENCE;
  wr.imm_data = in.ConsumeIntegral<uint32_t>();
  const Target t = pick_target(in, rig, r.peer_side);
  wr.invalidate_rkey = t.key;  // SEND with invalidate: a key of the peer's
  if (wr.opcode == IBV_WR_BIND_MW) {
    fill_bind(in, rig, s, pmtu, wr);
  } else if (wr.opcode == IBV_WR_LOCAL_INV) {
    wr.invalidate_rkey = pick_target(in, rig, s).key;  // one of its own side's
  } else if (wr.opcode == IBV_WR_ATOMIC_CMP_AND_SWP || wr.opcode == IBV_WR_ATOMIC_FETCH_AND_ADD) {
    wr.wr.atomic.remote_addr = in.ConsumeBool() ? t.va & ~uint64_t(7) : t.va;
    wr.wr.atomic.rkey = t.key;
    wr.wr.atomic.compare_add = in.ConsumeIntegral<uint64_t>();
    wr.wr.atomic.swap = in.ConsumeIntegral<uint64_t>();
  } else if (r.spec.type == IBV_QPT_UD) {
    wr.wr.ud.ah = rig.side(s).ah[in.ConsumeBool() ? 1 : 0].get();
    wr.wr.ud.remote_qpn = near(in, rig.side(1 - s).qps[size_t(q)].qp->qp_num()) & 0xFFFFFF;
    wr.wr.ud.remote_qkey = near(in, kQkey);
  } else {
    wr.wr.rdma.remote_addr = t.va;
    wr.wr.rdma.rkey = t.key;
  }
  const int rc = rig.post_send(s, q, wr);
  if (kTrace)
    std::fprintf(stderr, "  post_send side %d QP %d opcode %d sges %d len0 %u flags 0x%x: %d\n", s, q, int(wr.opcode),
                 wr.num_sge, wr.num_sge ? sge[0].length : 0, wr.send_flags, rc);
}

void post_recv(FuzzedDataProvider& in, EngineRig& rig) {
  const int s = pick_side(in);
  const int q = in.ConsumeIntegralInRange<int>(-1, int(kQpSpecs.size()) - 1);
  ibv_sge sge[3]{};
  RecvWr wr;
  wr.num_sge = in.ConsumeIntegralInRange<int>(0, 3);
  for (int i = 0; i < wr.num_sge; ++i) fill_sge(in, rig, s, sge[i], 1024);
  wr.sg_list = sge;
  (void)rig.post_recv(s, q, wr);
}

void modify(FuzzedDataProvider& in, EngineRig& rig) {
  const int s = pick_side(in);
  const int q = pick_qp(in);
  ibv_qp_attr a{};
  switch (in.ConsumeIntegralInRange<int>(0, 5)) {
    case 0: a.qp_state = IBV_QPS_ERR; (void)rig.modify(s, q, a, IBV_QP_STATE); break;
    case 1: a.qp_state = IBV_QPS_RESET; (void)rig.modify(s, q, a, IBV_QP_STATE); break;
    case 2: rig.reconnect(s, q, in.ConsumeIntegralInRange<uint32_t>(0, 8)); break;
    case 3: a.qp_state = IBV_QPS_SQD; (void)rig.modify(s, q, a, IBV_QP_STATE); break;
    case 4: a.qp_state = IBV_QPS_RTS; (void)rig.modify(s, q, a, IBV_QP_STATE); break;
    default:  // any attributes, any mask: refused or taken, never harmful
      a.qp_state = ibv_qp_state(in.ConsumeIntegralInRange<int>(0, 6));
      a.cur_qp_state = ibv_qp_state(in.ConsumeIntegralInRange<int>(0, 6));
      a.path_mtu = ibv_mtu(in.ConsumeIntegralInRange<int>(0, 6));
      a.qp_access_flags = in.ConsumeIntegral<uint8_t>();
      a.sq_psn = in.ConsumeIntegral<uint32_t>();
      a.rq_psn = in.ConsumeIntegral<uint32_t>();
      a.dest_qp_num = in.ConsumeIntegral<uint32_t>();
      a.min_rnr_timer = in.ConsumeIntegral<uint8_t>();
      a.timeout = in.ConsumeIntegral<uint8_t>();
      a.retry_cnt = in.ConsumeIntegral<uint8_t>();
      a.rnr_retry = in.ConsumeIntegral<uint8_t>();
      a.max_rd_atomic = in.ConsumeIntegral<uint8_t>();
      a.max_dest_rd_atomic = in.ConsumeIntegral<uint8_t>();
      a.port_num = in.ConsumeIntegralInRange<uint8_t>(0, 2);
      a.qkey = in.ConsumeIntegral<uint32_t>();
      {
        const int mask = in.ConsumeIntegral<int>() & ((1 << 21) - 1);
        const int rc = rig.modify(s, q, a, mask);
        if (kTrace)
          std::fprintf(stderr, "  modify side %d QP %d state %d mask 0x%x timeout %u retry %u rnr %u: %d\n", s, q,
                       int(a.qp_state), mask, a.timeout, a.retry_cnt, a.rnr_retry, rc);
      }
      break;
  }
}

void step(FuzzedDataProvider& in, EngineRig& rig) {
  const int kind = in.ConsumeIntegralInRange<int>(0, 13);
  if (kTrace) std::fprintf(stderr, "step %d\n", kind);
  switch (kind) {
    case 0: case 1: case 2: case 3: inject_frame(in, rig, false); break;
    case 4: inject_frame(in, rig, true); break;
    case 5: rig.run_for(in.ConsumeIntegralInRange<uint64_t>(0, 20'000)); break;
    case 6: rig.run_for(in.ConsumeIntegralInRange<uint64_t>(0, 50'000'000)); break;  // timers fire
    case 7: case 8: post_send(in, rig); break;
    case 9: post_recv(in, rig); break;
    case 10: modify(in, rig); break;
    case 11: rig.poll_cqs(in.ConsumeIntegralInRange<int>(1, 64)); break;
    case 12: {  // the next frame(s) between the devices lost
      const int s = pick_side(in);
      rig.fabric().wire().drop_one(rig.fabric().port(size_t(s)), rig.fabric().port(size_t(1 - s)),
                                   in.ConsumeIntegralInRange<uint32_t>(0, 4));
      break;
    }
    default: rig.side(pick_side(in)).dev->poll(); break;
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  std::vector<std::string> args = {"fuzz_engine", "--no-huge", "-m", "512", "--no-shconf", "--no-pci",
                                   "--no-telemetry", "-l", "0", "--log-level=error"};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  if (rte_eal_init(int(argv.size()), argv.data()) < 0) {
    std::fprintf(stderr, "fuzz_engine: rte_eal_init failed\n");
    std::exit(2);
  }
  rte_mempool* pool = rte_pktmbuf_pool_create("fuzz_inject", 1023, 0, 0, 2048 + RTE_PKTMBUF_HEADROOM, int(rte_socket_id()));
  if (pool == nullptr) {
    std::fprintf(stderr, "fuzz_engine: mbuf pool\n");
    std::exit(2);
  }
  set_inject_pool(pool);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  static EngineRig* rig_ptr = new EngineRig;  // lives as long as the process
  EngineRig& rig = *rig_ptr;
  rig.begin();
  rig.check_step();
  for (size_t i = 0; i < kMaxSteps && in.remaining_bytes() > 0; ++i) {
    step(in, rig);
    rig.check_step();
  }
  rig.finish();
  return 0;
}
