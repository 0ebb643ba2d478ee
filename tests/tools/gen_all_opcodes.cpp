// SPDX-License-Identifier: BSD-3-Clause
// Writes a pcap with a frame built by the library for every supported
// opcode, over IPv4 and IPv6, with and without a VLAN tag, so that an
// independent checker (the oracle, tshark) can judge what we put on the wire.
//
// usage: gen_all_opcodes OUT.pcap
#include <cstdio>
#include <vector>

#include "uroce/capture/pcap_file.h"
#include "uroce/wire/builder.h"
#include "uroce/wire/ext_headers.h"
#include "uroce/wire/opcode.h"

using namespace uroce::wire;

namespace {

constexpr uint32_t kPmtu = 1024;

uint32_t payload_len_for(const OpcodeInfo& op, unsigned variant) {
  if (!op.has(opf::payload)) return 0;
  if (op.is_first() || op.is_middle()) return kPmtu;
  // A LAST packet carries 1..PMTU bytes (an empty one is legal but odd,
  // and the oracle warns about it); ONLY may be empty.
  static constexpr uint32_t kOnlyLens[] = {0, 1, 13, 1021, kPmtu};
  static constexpr uint32_t kLastLens[] = {2, 1, 13, 1021, kPmtu};
  return op.is_only() ? kOnlyLens[variant % 5] : kLastLens[variant % 5];
}

PacketFields fields_for(uint8_t code, bool ipv6, bool vlan, unsigned variant) {
  const OpcodeInfo& info = opcode_info(code);
  PacketFields f;
  MacAddr::parse("02:00:00:00:00:0a", f.eth.src);
  MacAddr::parse("02:00:00:00:00:0b", f.eth.dst);
  f.eth.has_vlan = vlan;
  f.eth.vlan_tci = vlan ? 0x6064 : 0;  // PCP 3, VID 100
  f.ip.ipv6 = ipv6;
  IpAddr::parse(ipv6 ? "fd00::a" : "192.168.100.1", f.ip.src);
  IpAddr::parse(ipv6 ? "fd00::b" : "192.168.100.2", f.ip.dst);
  f.ip.dscp = code == op::CNP ? 48 : 26;
  f.ip.ecn = code == op::CNP ? 0 : 2;  // ECT(0) on data
  f.ip.id = ipv6 ? 0 : uint16_t(variant);
  f.ip.df = !ipv6;
  f.ip.flow_label = ipv6 ? 0x12345 : 0;
  // One flow per opcode keeps the oracle's per-flow PMTU inference simple.
  f.bth.dest_qp = 0x100 + code;
  f.udp.sport = roce_udp_sport(0, 0x11, f.bth.dest_qp);
  f.bth.opcode = code;
  f.bth.psn = (0xFFFFF0 + variant) & kPsnMask;
  f.bth.ack_req = info.is_last() || info.is_only();
  f.bth.becn = code == op::CNP;
  f.payload_len = payload_len_for(info, variant);
  f.ext.reth_va = 0x7f0000001000;
  f.ext.reth_rkey = 0x1234;
  f.ext.reth_dma_len = info.is_first() ? 4 * kPmtu : f.payload_len;
  if (info.has(opf::read | opf::request)) f.ext.reth_dma_len = 4096;
  f.ext.aeth_syndrome = kAethAckNoCredit;
  f.ext.aeth_msn = 7;
  f.ext.atomic_va = 0x7f0000002000;
  f.ext.atomic_rkey = 0x5678;
  f.ext.atomic_swap_add = 0x1111111111111111;
  f.ext.atomic_compare = 0x2222222222222222;
  f.ext.atomic_ack_orig = 0x3333333333333333;
  f.ext.imm = 0xDEADBEEF;
  f.ext.ieth_rkey = 0xC0FFEE;
  f.ext.deth_qkey = 0x11111111;
  f.ext.deth_src_qp = 0x11;
  return f;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUT.pcap\n", argv[0]);
    return 2;
  }
  std::string error;
  auto out = uroce::capture::PcapWriter::create(argv[1], error);
  if (!out) {
    std::fprintf(stderr, "%s\n", error.c_str());
    return 2;
  }
  std::vector<uint8_t> frame(8192), payload(kPmtu);
  for (size_t i = 0; i < payload.size(); ++i) payload[i] = uint8_t(i * 7 + 1);
  unsigned frames = 0;
  for (int code = 0; code < 256; ++code) {
    if (!opcode_info(uint8_t(code)).valid()) continue;
    for (unsigned combo = 0; combo < 4; ++combo) {
      for (unsigned variant = 0; variant < 5; ++variant) {
        PacketFields f = fields_for(uint8_t(code), combo & 1, combo & 2, variant);
        FrameLayout lay;
        BuildOptions opts{.compute_udp_checksum = variant == 4};
        BuildError e = build_frame(f, {payload.data(), f.payload_len}, frame, lay, opts);
        if (e != BuildError::ok) {
          std::fprintf(stderr, "opcode 0x%02x: %s\n", code, to_string(e));
          return 1;
        }
        out->write({frame.data(), lay.frame_len}, int64_t(frames) * 10);
        ++frames;
      }
    }
  }
  if (!out->flush(error)) {
    std::fprintf(stderr, "%s\n", error.c_str());
    return 2;
  }
  std::printf("wrote %u frames to %s\n", frames, argv[1]);
  return 0;
}
