// SPDX-License-Identifier: BSD-3-Clause
// The Linux rxe captures in tests/data/rxe, with each RoCE packet's BTH
// fields read straight from the bytes (not through the library), so that
// the README's facts can be checked independently of the parser.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace uroce::test {

struct RawRoce {
  int frame_no = 0;  // 1-based position in the pcap, as tshark numbers it
  const std::vector<uint8_t>* bytes = nullptr;
  size_t bth = 0;    // offset of the BTH
  uint32_t ip_src = 0;
  uint16_t sport = 0;
  uint16_t udp_len = 0;
  uint8_t opcode = 0;
  bool ack_req = false;
  uint32_t dest_qp = 0;
  uint32_t psn = 0;

  uint32_t be32_at(size_t off_from_bth) const;  // e.g. RETH DMA length at 12 + 12
  uint64_t be64_at(size_t off_from_bth) const;
};

struct RxeCapture {
  std::string name;  // e.g. "write_bw.pcap"
  std::vector<std::vector<uint8_t>> frames;
  std::vector<RawRoce> roce;  // the IPv4/UDP/4791 frames, in capture order
};

// All captures, loaded once.
const std::vector<RxeCapture>& rxe_captures();
const RxeCapture& rxe_capture(const std::string& name);

// The 'packets (RoCE)' column of tests/data/rxe/README.md, by file name.
std::map<std::string, int> readme_packet_counts();

inline constexpr uint32_t kVmA = 0x0A630002;  // 10.99.0.2, the server
inline constexpr uint32_t kVmB = 0x0A630003;  // 10.99.0.3, the client

}  // namespace uroce::test
