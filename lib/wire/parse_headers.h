// SPDX-License-Identifier: BSD-3-Clause
// Internal: the header walk shared by parse_frame() and parse_mbuf().
#pragma once

#include "uroce/wire/parser.h"

namespace uroce::wire::detail {

// Validates everything up to the start of the payload from `avail`
// contiguous bytes at `hdr`, in a frame of `frame_len` bytes. Fills all of
// `v` but payload/mbuf/icrc fields.
ParseError parse_headers(const uint8_t* hdr, size_t avail, size_t frame_len, PacketView& v,
                         const ParseOptions& opts);

// CRC state after the masked headers and the extension headers (and the
// first `body_len` <= kIcrcSmallBody bytes after them, when they are in
// place in v.headers): what the rest of the body and the ICRC continue from.
uint32_t icrc_through_ext(const PacketView& v, size_t body_len = 0);

}  // namespace uroce::wire::detail
