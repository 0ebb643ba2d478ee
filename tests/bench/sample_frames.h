// SPDX-License-Identifier: BSD-3-Clause
// The frames the benchmarks parse and build: an RC ACK (headers only), a
// 64 B SEND ONLY and a 4 KB RDMA WRITE MIDDLE, IPv4, as rxe sends them.
#pragma once

#include <cstdint>
#include <vector>

#include "uroce/wire/builder.h"
#include "uroce/wire/packet_fields.h"

namespace uroce::bench {

struct SampleFrame {
  wire::PacketFields fields;
  std::vector<uint8_t> payload;
  std::vector<uint8_t> bytes;  // the built frame; empty if the builder failed
};

SampleFrame make_ack();
SampleFrame make_send_only(uint32_t payload_len);
SampleFrame make_write_middle(uint32_t payload_len);

}  // namespace uroce::bench
