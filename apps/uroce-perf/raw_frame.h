// The frames of raw_bw / raw_lat: Ethernet header (IEEE local experimental
// type 0x88B5), an 8-byte sequence number, then a pattern seeded by it.
#pragma once

#include <cstdint>
#include <string>

#include "uroce/wire/eth.h"

struct rte_mbuf;
struct rte_mempool;

namespace uroce::perf {

inline constexpr uint16_t kRawEtherType = 0x88B5;

// false when the pool is empty.
bool make_raw_frame(rte_mempool* pool, const wire::MacAddr& src, const wire::MacAddr& dst, uint64_t size,
                    uint64_t seq, rte_mbuf*& m);
// Ours, and its sequence number; false for any other frame (ARP, ...).
bool raw_frame_seq(const rte_mbuf* m, uint64_t& seq);
// The expected length and sequence number and, with verify, the pattern.
bool check_raw_frame(const rte_mbuf* m, uint64_t size, uint64_t want_seq, bool verify, std::string& error);

}  // namespace uroce::perf
