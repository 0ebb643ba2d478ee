// SPDX-License-Identifier: BSD-3-Clause
#include "test_support.h"

#include <stdexcept>

#include "uroce/capture/pcap_file.h"
#include "uroce/wire/builder.h"
#include "uroce/wire/ext_headers.h"
#include "uroce/wire/opcode.h"
#include "uroce/wire/parser.h"

#ifndef UROCE_TEST_DATA
#error "UROCE_TEST_DATA must name tests/data"
#endif

namespace uroce::test {
namespace {

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  throw std::invalid_argument("not a hex digit");
}

}  // namespace

std::vector<uint8_t> from_hex(std::string_view hex) {
  if (hex.size() % 2 != 0) throw std::invalid_argument("odd hex length");
  std::vector<uint8_t> out(hex.size() / 2);
  for (size_t i = 0; i < out.size(); ++i)
    out[i] = uint8_t(hex_digit(hex[2 * i]) << 4 | hex_digit(hex[2 * i + 1]));
  return out;
}

std::string data_path(std::string_view relative) {
  return std::string(UROCE_TEST_DATA) + "/" + std::string(relative);
}

std::vector<std::vector<uint8_t>> read_pcap(const std::string& path) {
  std::string error;
  auto reader = capture::PcapReader::open(path, error);
  if (!reader) throw std::runtime_error(error);
  std::vector<std::vector<uint8_t>> frames;
  capture::CapturedFrame f;
  while (reader->next(f)) frames.emplace_back(f.bytes.begin(), f.bytes.end());
  if (!reader->error().empty()) throw std::runtime_error(reader->error());
  return frames;
}

std::vector<uint8_t> pattern_bytes(size_t n, uint8_t seed) {
  std::vector<uint8_t> out(n);
  for (size_t i = 0; i < n; ++i) out[i] = uint8_t(seed + i * 7 + (i >> 8));
  return out;
}

wire::PacketFields sample_fields(uint8_t opcode, bool ipv6, bool vlan, uint32_t payload_len) {
  using namespace wire;
  const OpcodeInfo& op = opcode_info(opcode);
  PacketFields f;
  MacAddr::parse("02:00:00:00:00:0a", f.eth.src);
  MacAddr::parse("02:00:00:00:00:0b", f.eth.dst);
  f.eth.has_vlan = vlan;
  f.eth.vlan_tci = vlan ? 0xA064 : 0;
  f.ip.ipv6 = ipv6;
  IpAddr::parse(ipv6 ? "fd00:100::1" : "192.168.100.1", f.ip.src);
  IpAddr::parse(ipv6 ? "fd00:100::2" : "192.168.100.2", f.ip.dst);
  f.ip.dscp = 26;
  f.ip.ecn = 2;
  f.ip.ttl = 64;
  f.ip.id = ipv6 ? 0 : 0x1234;
  f.ip.df = !ipv6;
  f.ip.flow_label = ipv6 ? 0xABCDE : 0;
  f.udp.sport = 0xC123;
  f.bth.opcode = opcode;
  f.bth.pkey = 0xFFFF;
  f.bth.dest_qp = 0x123456;
  f.bth.psn = 0xABCDEF;
  f.bth.ack_req = op.is_last() || op.is_only();
  f.payload_len = payload_len;
  f.ext.reth_va = 0x7F0000001000;
  f.ext.reth_rkey = 0x1234;
  // A FIRST packet announces more than it carries; an ONLY exactly its payload.
  f.ext.reth_dma_len = op.is_first() ? payload_len * 4 : payload_len;
  if (op.has(opf::read | opf::request)) f.ext.reth_dma_len = 4096;
  f.ext.aeth_syndrome = kAethAckNoCredit;
  f.ext.aeth_msn = 0x010203;
  f.ext.atomic_va = 0x7F0000002000;
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

std::vector<uint8_t> build_or_throw(const wire::PacketFields& f, std::span<const uint8_t> payload,
                                    bool udp_checksum) {
  std::vector<uint8_t> out(wire::kMaxHeaderLen + payload.size() + 8);
  wire::FrameLayout layout;
  wire::BuildOptions opts;
  opts.compute_udp_checksum = udp_checksum;
  const wire::BuildError e = wire::build_frame(f, payload, out, layout, opts);
  if (e != wire::BuildError::ok) throw std::runtime_error(wire::to_string(e));
  out.resize(layout.frame_len);
  return out;
}

}  // namespace uroce::test
