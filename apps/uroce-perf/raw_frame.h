// SPDX-License-Identifier: BSD-3-Clause
// The frames of raw_bw / raw_lat: Ethernet header (IEEE local experimental
// type 0x88B5), an 8-byte sequence number, then a pattern seeded by it.
#pragma once

#include <cstdint>
#include <string>

#include "uroce/wire/eth.h"

struct rte_mbuf;
struct rte_mempool;

namespace uroce {
class PacketPort;
}

namespace uroce::perf {

inline constexpr uint16_t kRawEtherType = 0x88B5;

// false (and m null) when the pool is empty.
bool make_raw_frame(rte_mempool* pool, const wire::MacAddr& src, const wire::MacAddr& dst, uint64_t size,
                    uint64_t seq, rte_mbuf*& m);
// raw_lat --raw-acks: the frame that goes ahead of each raw_lat frame, as an
// RC responder's ACK goes ahead of its answer. 62 bytes, a RoCEv2 ACK's size
// over IPv4 (14 Eth + 20 IP + 8 UDP + 12 BTH + 4 AETH + 4 ICRC).
inline constexpr uint64_t kAckFrameSize = 62;
bool make_ack_frame(rte_mempool* pool, const wire::MacAddr& src, const wire::MacAddr& dst, rte_mbuf*& m);
bool is_ack_frame(const rte_mbuf* m);
// Sends `m`, behind `ack` unless that is null, in one burst; gives up (and
// frees what is left) after `tries` calls of tx_burst. False when not both
// went out (with tries 1, a retry sends the ACK-sized frame again: harmless,
// the receiver only notes that one came).
bool send_raw(PacketPort& port, rte_mbuf* ack, rte_mbuf* m, uint64_t tries);
// Ours, and its sequence number; false for any other frame (ARP, ...).
bool raw_frame_seq(const rte_mbuf* m, uint64_t& seq);
// The expected length and sequence number and, with verify, the pattern.
bool check_raw_frame(const rte_mbuf* m, uint64_t size, uint64_t want_seq, bool verify, std::string& error);

}  // namespace uroce::perf
