// SPDX-License-Identifier: BSD-3-Clause
// Entry points of the transport units, called by the engine and the verbs
// objects. All run on the engine's thread.
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>

#include "memory/region.h"
#include "qp.h"
#include "uroce/wire/builder.h"
#include "uroce/wire/parser.h"

struct rte_mbuf;

namespace uroce::transport {

// Requester (requester.cpp): sends request packets while the window, the
// READ/ATOMIC credit and the TX queue allow.
void requester_tx(Qp& qp);
// Go back to `psn` and resend from there (go-back-N).
void requester_rewind(Qp& qp, uint32_t psn);

// Completer (completer.cpp): ACKs, NAKs, READ responses, atomic ACKs.
void completer_rx(Qp& qp, const wire::PacketView& pkt);
// Local ACK timeout and the end of an RNR wait.
void completer_timer(Qp& qp);
// Completes the memory window operations at the front of the send queue
// (they complete as soon as everything before them has).
void complete_local_ops(Qp& qp);

// Responder (responder.cpp, responder_out.cpp).
void responder_rx(Qp& qp, const wire::PacketView& pkt);
void responder_tx(Qp& qp);
// Sends the plain ACKs waiting at the head of the responder's queue (they
// leave one poll late, see queue_ack): a QP about to be destroyed or reset
// owes its peer the ACK of what the application has already seen complete.
void responder_send_deferred_acks(Qp& qp);
// UC's responder (responder.cpp): every packet a UC QP receives.
void uc_rx(Qp& qp, const wire::PacketView& pkt);

// UD (ud.cpp).
void ud_send(Qp& qp);
void ud_rx(Qp& qp, const wire::PacketView& pkt);

// A receive WQE was just taken off the QP's receive queue (post.cpp): an
// armed SRQ limit may fire its event.
void recv_taken(Qp& qp);

// Completions and errors (completion.cpp).
void complete_send(Qp& qp, SendWqe& wqe, ibv_wc_status status);
// The completion opcode of a work request's opcode.
ibv_wc_opcode wc_opcode(ibv_wr_opcode op);
// Into the QP's receive CQ.
// solicited: the message carried the SE bit (ibv_req_notify_cq).
void complete_recv(Qp& qp, const ibv_wc& wc, bool solicited = false);
void release_sges(Qp& qp, const SgeList& sgl);
// Moves to (or stays in) the error state and flushes outstanding work.
void move_to_error(Qp& qp);
// A QP that was not in the error state enters it: move_to_error, and
// IBV_EVENT_QP_LAST_WQE_REACHED for a QP on an SRQ.
void enter_error(Qp& qp);
// The transport itself failed the QP (retries exhausted, a NAK, a remote
// access error): IBV_EVENT_QP_FATAL, then move_to_error.
void fail_qp(Qp& qp);

// Packet construction (packet.cpp).
struct OutPacket {
  rte_mbuf* m = nullptr;
  uint8_t* payload = nullptr;
  wire::FrameLayout lay;
  bool to_self = false;  // loops back in the engine (the QP's, or a UD WR's, Qp::to_self)
};
// Headers for fields f (f.payload_len bytes to follow) in a fresh mbuf.
bool start_packet(Qp& qp, const wire::PacketFields& f, OutPacket& out);
// The same for a packet of a connected QP: its header template plus `p`
// and the extension headers.
bool start_rc_packet(Qp& qp, const wire::PacketSpec& p, const wire::ExtFields& ext, OutPacket& out);
// Whether a packet for the connected QP `qp` comes from the address it sends
// to (as rxe's check_addr): anything else is not its peer's.
bool from_peer(const Qp& qp, const wire::PacketView& pkt);
// Pad, ICRC, hand to the engine's TX queue. `paced`: a data packet (request
// or READ response) that counts against the QP's rate; ACKs do not (DCQCN
// limits the data a QP sends, and they are sent without waiting for it).
void finish_packet(Qp& qp, OutPacket& out, bool paced = true);
// The whole packet without copying its payload: headers, then a segment
// pointing at [p, p + spec.payload_len) inside `mr`, then pad and ICRC.
// False (nothing sent) when an mbuf is missing.
bool send_zero_copy(Qp& qp, const wire::PacketSpec& spec, const wire::ExtFields& ext, memory::Region& mr,
                    uint8_t* p);
// Fields of a packet of this QP: the QP's header template plus a BTH.
wire::PacketFields packet_fields(const Qp& qp, uint8_t opcode, uint32_t psn, uint32_t payload_len);

// Timer values.
uint64_t ack_timeout_ns(uint8_t timeout);   // 4.096 us * 2^timeout; 0 = no timer
uint64_t rnr_timer_ns(uint8_t code);        // IBA table of the 5-bit RNR NAK timer
uint32_t mtu_bytes(ibv_mtu mtu);            // 0 if not a valid enum

}  // namespace uroce::transport
