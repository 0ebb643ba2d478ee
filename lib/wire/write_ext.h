// SPDX-License-Identifier: BSD-3-Clause
// Extension headers of an opcode from their field values: shared by the
// frame builder and the per-connection header template.
#pragma once

#include <cstdint>

#include "uroce/wire/opcode.h"
#include "uroce/wire/packet_fields.h"

namespace uroce::wire::detail {

// Writes the extension headers `op` carries after the BTH at `bth`.
void write_ext(const OpcodeInfo& op, const ExtFields& x, uint8_t* bth);

}  // namespace uroce::wire::detail
