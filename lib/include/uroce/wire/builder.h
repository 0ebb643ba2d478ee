// SPDX-License-Identifier: BSD-3-Clause
// Frame builder: writes every header for an opcode from PacketFields,
// finalises lengths, pad count and the IPv4 checksum, and computes the ICRC.
//
// build_headers() + finish_icrc() let a sender keep the payload where it is
// (e.g. an mbuf segment pointing into a registered region) and hash it in
// place; build_frame() is the contiguous convenience.
#pragma once

#include "uroce/api.h"

#include <cstddef>
#include <cstdint>
#include <span>

#include "uroce/wire/packet_fields.h"

namespace uroce::wire {

enum class BuildError : uint8_t {
  ok = 0,
  bad_opcode,          // reserved/unsupported opcode, or TVer != 0
  payload_not_allowed, // payload on an opcode that carries none
  payload_too_long,    // over 4096 bytes
  payload_mismatch,    // payload span size != fields.payload_len
  no_room,             // output buffer too small
  bad_address,         // IPv4 frame with a non-v4-mapped address
};
UROCE_API const char* to_string(BuildError e);

struct FrameLayout {
  uint16_t l3_off = 0;
  uint16_t l4_off = 0;
  uint16_t bth_off = 0;
  uint16_t payload_off = 0;  // = header length
  uint32_t payload_len = 0;
  uint8_t pad = 0;
  bool ipv6 = false;
  uint32_t frame_len = 0;    // headers + payload + pad + ICRC
};

struct BuildOptions {
  bool compute_udp_checksum = false;  // otherwise fields.udp.checksum is written as given
};

// Who fills in an IPv4 header checksum: the builder, or the port's TX
// offload (the field is then left zero).
enum class Ipv4Checksum : uint8_t { compute, offloaded };

// Writes headers [0, layout.payload_off) for a payload of f.payload_len bytes.
UROCE_API BuildError build_headers(const PacketFields& f, std::span<uint8_t> out, FrameLayout& layout,
                         Ipv4Checksum ipv4_checksum = Ipv4Checksum::compute);

// ICRC of a frame whose headers are at `headers` and whose payload is the
// concatenation of `pieces`, followed by layout.pad zero bytes.
UROCE_API uint32_t compute_icrc(const uint8_t* headers, const FrameLayout& layout,
                      std::span<const std::span<const uint8_t>> pieces);

// Whole frame into `out`: headers, payload, zero pad, ICRC.
UROCE_API BuildError build_frame(const PacketFields& f, std::span<const uint8_t> payload, std::span<uint8_t> out,
                       FrameLayout& layout, const BuildOptions& opts = {});

}  // namespace uroce::wire
