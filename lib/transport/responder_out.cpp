// SPDX-License-Identifier: BSD-3-Clause
#include "responder_out.h"

#include <cstring>

#include "services.h"
#include "../memory/access.h"
#include "cc.h"
#include "psn.h"
#include "transport.h"

namespace uroce::transport {
namespace {

using namespace wire;

bool plain_ack(uint8_t syndrome) { return aeth_type(syndrome) == AethType::ack; }

bool send_ack_packet(Qp& qp, uint8_t syndrome, uint32_t psn, uint32_t msn) {
  ExtFields ext;
  ext.aeth_syndrome = syndrome;
  ext.aeth_msn = msn;
  OutPacket out;
  if (!start_rc_packet(qp, PacketSpec{op::RC_ACKNOWLEDGE, psn}, ext, out)) return false;
  finish_packet(qp, out, /*paced=*/false);
  if (!plain_ack(syndrome) && aeth_type(syndrome) == AethType::nak) ++qp.counters.nak_sent;
  return true;
}

bool send_atomic_ack(Qp& qp, const RdAtomicResource& r) {
  ExtFields ext;
  ext.aeth_syndrome = kAethAckNoCredit;
  ext.aeth_msn = r.msn;
  ext.atomic_ack_orig = r.orig;
  OutPacket out;
  if (!start_rc_packet(qp, PacketSpec{op::RC_ATOMIC_ACKNOWLEDGE, r.first_psn}, ext, out)) return false;
  finish_packet(qp, out, /*paced=*/false);
  return true;
}

uint8_t read_opcode(uint32_t index, uint32_t count) {
  if (count == 1) return op::RC_RDMA_READ_RESPONSE_ONLY;
  if (index == 0) return op::RC_RDMA_READ_RESPONSE_FIRST;
  return index + 1 == count ? op::RC_RDMA_READ_RESPONSE_LAST : op::RC_RDMA_READ_RESPONSE_MIDDLE;
}

// One READ response packet at e.cursor_psn. False: stop (no TX room, or
// the QP failed).
bool send_read_packet(Qp& qp, RespOut& e, const RdAtomicResource& r) {
  const uint32_t pmtu = qp.attr.pmtu;
  const uint32_t count = r.length == 0 ? 1 : (r.length + pmtu - 1) / pmtu;
  const uint32_t index = uint32_t(psn_diff(e.cursor_psn, r.first_psn));
  const uint64_t off = uint64_t(index) * pmtu;
  const uint32_t len = uint32_t(std::min<uint64_t>(pmtu, r.length - off));
  // Checked again for every packet: the region may have been deregistered.
  memory::AccessError err;
  const uint8_t* src =
      memory::resolve_remote(qp.eng->mrs(), qp.pd, qp.qpn, r.rkey, r.va + off, len, IBV_ACCESS_REMOTE_READ, err);
  if (src == nullptr) {
    send_nak_now(qp, make_aeth_syndrome(AethType::nak, uint8_t(NakCode::remote_access_error)), e.cursor_psn);
    fail_qp(qp);
    return false;
  }
  ExtFields ext;
  ext.aeth_syndrome = kAethAckNoCredit;
  ext.aeth_msn = r.msn;
  // Copied, never sent in place: the region is the responder's own memory,
  // which its application may change at any time (a flag the peer polls
  // by READ), and a frame whose payload changed after its ICRC was taken
  // would be dropped by the peer again and again. The copy is a snapshot.
  OutPacket out;
  if (!start_rc_packet(qp, PacketSpec{read_opcode(index, count), e.cursor_psn, len}, ext, out)) return false;
  if (len) std::memcpy(out.payload, src, len);
  finish_packet(qp, out);
  e.cursor_psn = psn_add(e.cursor_psn, 1);
  return true;
}

// Sends what it can of the front entry; true when the entry is finished.
bool send_entry(Qp& qp, RespOut& e, bool& stop) {
  if (e.kind == RespOut::ack && plain_ack(e.syndrome) && e.poll == qp.eng->poll_seq()) {
    stop = true;  // queued by this poll's receive: leaves with the next poll's frames
    return false;
  }
  if (e.kind == RespOut::ack) {
    stop = !send_ack_packet(qp, e.syndrome, e.psn, e.msn);
    return !stop;
  }
  const RdAtomicResource& r = qp.resp.res[e.res];
  if (r.generation != e.generation) return true;  // overwritten meanwhile: drop
  if (e.kind == RespOut::atomic) {
    stop = !send_atomic_ack(qp, r);
    return !stop;
  }
  while (!psn_lt(r.last_psn, e.cursor_psn)) {
    // READ response data is paced like requests: a CNP for this QP may
    // be about exactly this traffic.
    if (!qp.eng->tx_has_room() || !cc_gate(qp) || !send_read_packet(qp, e, r)) {
      stop = true;
      return false;
    }
  }
  return true;
}

}  // namespace

// A plain ACK leaves on the poll after the one whose receive queued it,
// not at once: an application that answers what it just received (a
// ping-pong, perftest's write_lat) posts in between, and its request and
// the ACK then go out in one burst, which on a shared-memory link costs
// one ring update instead of two. It also coalesces the ACKs of two
// receive bursts. The delay is one poll, nothing next to the ACK timeout;
// the replacement below keeps the first ACK's poll, so a steady stream of
// requests cannot hold the ACK back.
void queue_ack(Qp& qp, uint8_t syndrome, uint32_t psn) {
  auto& out = qp.resp.out;
  if (plain_ack(syndrome) && !out.empty()) {
    RespOut& tail = out.at(out.head() - 1);
    if (tail.kind == RespOut::ack && plain_ack(tail.syndrome)) {
      tail.psn = psn;
      tail.msn = qp.resp.msn;
      ++qp.counters.ack_deferred;
      return;
    }
  }
  if (out.full()) return;  // the requester retries; nothing is lost
  RespOut& e = out.push();
  e = RespOut{};
  e.kind = RespOut::ack;
  e.syndrome = syndrome;
  e.psn = psn;
  e.msn = qp.resp.msn;
  e.poll = qp.eng->poll_seq();
  // A plain ACK waits for the next round; anything else goes in this one.
  if (plain_ack(syndrome)) qp.eng->schedule_next(&qp);
  else qp.eng->schedule(&qp);
}

void send_nak_now(Qp& qp, uint8_t syndrome, uint32_t psn) { send_ack_packet(qp, syndrome, psn, qp.resp.msn); }

RdAtomicResource& new_resource(Qp& qp) {
  auto& res = qp.resp.res;
  const uint32_t generation = res[qp.resp.res_next % res.size()].generation + 1;
  RdAtomicResource& r = res[qp.resp.res_next++ % res.size()];
  r = RdAtomicResource{};
  r.generation = generation;
  return r;
}

RdAtomicResource* find_resource(Qp& qp, uint32_t psn) {
  for (RdAtomicResource& r : qp.resp.res)
    if (r.kind != RdAtomicResource::none && psn_le(r.first_psn, psn) && psn_le(psn, r.last_psn)) return &r;
  return nullptr;
}

void queue_response(Qp& qp, RdAtomicResource& r, uint32_t from_psn) {
  auto& out = qp.resp.out;
  if (out.full()) return;
  RespOut& e = out.push();
  e = RespOut{};
  e.kind = r.kind == RdAtomicResource::read ? RespOut::read : RespOut::atomic;
  e.res = uint32_t(&r - qp.resp.res.data());
  e.generation = r.generation;
  e.cursor_psn = from_psn;
  qp.eng->schedule(&qp);
}

void responder_tx(Qp& qp) {
  auto& out = qp.resp.out;
  bool stop = false;
  while (!out.empty() && !stop && qp.eng->tx_has_room()) {
    if (!send_entry(qp, out.front(), stop)) break;
    if (qp.state == IBV_QPS_ERR) return;
    out.pop();
  }
}

void responder_send_deferred_acks(Qp& qp) {
  auto& out = qp.resp.out;
  // Not through send_entry: it holds back an ACK queued in this poll,
  // and no other poll comes for this QP.
  while (!out.empty() && out.front().kind == RespOut::ack && qp.eng->tx_has_room()) {
    const RespOut& e = out.front();
    if (!send_ack_packet(qp, e.syndrome, e.psn, e.msn)) return;
    out.pop();
  }
}

}  // namespace uroce::transport
