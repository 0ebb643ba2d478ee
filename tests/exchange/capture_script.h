// SPDX-License-Identifier: BSD-3-Clause
// The perftest TCP payloads of the rxe captures
// (tests/data/exchange/perftest/perftest_tcp.txt), in capture order.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace uroce::test {

struct TcpPayload {
  int frame = 0;            // pcap frame number, for messages
  bool from_client = true;  // C: client -> server, S: server -> client
  std::vector<uint8_t> bytes;
};

// The payloads of one capture ("write_bw", "read_lat", ...); fails the
// running test if the file or the capture is missing.
const std::vector<TcpPayload>& perftest_capture(const std::string& name);

inline std::string as_string(const std::vector<uint8_t>& b) { return std::string(b.begin(), b.end()); }

}  // namespace uroce::test
