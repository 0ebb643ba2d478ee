// SPDX-License-Identifier: BSD-3-Clause
#include "sample_frames.h"

#include "uroce/wire/opcode.h"
#include "uroce/wire/parser.h"

namespace uroce::bench {
namespace {

wire::PacketFields base_fields(uint8_t opcode) {
  wire::PacketFields f;
  wire::MacAddr::parse("52:54:00:99:00:03", f.eth.dst);
  wire::MacAddr::parse("52:54:00:99:00:02", f.eth.src);
  wire::IpAddr::parse("10.99.0.2", f.ip.src);
  wire::IpAddr::parse("10.99.0.3", f.ip.dst);
  f.udp.sport = wire::roce_udp_sport(0, 0x11, 0x11);
  f.bth.opcode = opcode;
  f.bth.dest_qp = 0x11;
  f.bth.psn = 0x123456;
  return f;
}

SampleFrame finish(wire::PacketFields f, uint32_t payload_len) {
  SampleFrame s;
  s.payload.resize(payload_len);
  for (uint32_t i = 0; i < payload_len; ++i) s.payload[i] = uint8_t(i * 7 + 1);
  f.payload_len = payload_len;
  s.fields = f;
  std::vector<uint8_t> out(wire::kMaxHeaderLen + payload_len + 8);
  wire::FrameLayout layout;
  if (wire::build_frame(f, s.payload, out, layout) == wire::BuildError::ok) {
    out.resize(layout.frame_len);
    s.bytes = std::move(out);
  }
  return s;
}

}  // namespace

SampleFrame make_ack() {
  wire::PacketFields f = base_fields(wire::op::RC_ACKNOWLEDGE);
  f.ext.aeth_msn = 1;
  return finish(f, 0);
}

SampleFrame make_send_only(uint32_t payload_len) {
  wire::PacketFields f = base_fields(wire::op::RC_SEND_ONLY);
  f.bth.ack_req = true;
  return finish(f, payload_len);
}

SampleFrame make_write_middle(uint32_t payload_len) {
  return finish(base_fields(wire::op::RC_RDMA_WRITE_MIDDLE), payload_len);
}

}  // namespace uroce::bench
