// SPDX-License-Identifier: BSD-3-Clause
// Small helpers shared by the unit tests: hex text, test data paths,
// reading a whole pcap, and building a frame that must build.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "uroce/wire/packet_fields.h"

namespace uroce::test {

// "0a1B" -> {0x0a, 0x1b}; throws on odd length or a non-hex digit.
std::vector<uint8_t> from_hex(std::string_view hex);

// Path of a file under tests/data.
std::string data_path(std::string_view relative);

// Every frame of a pcap file, in order; throws if the file cannot be read.
std::vector<std::vector<uint8_t>> read_pcap(const std::string& path);

// Deterministic, position-dependent bytes, so a misplaced byte is visible.
std::vector<uint8_t> pattern_bytes(size_t n, uint8_t seed);

// A plausible RC/UC/UD/CNP packet for `opcode` with a legal payload length
// of `payload_len`, fixed addresses and every extension field non-zero.
wire::PacketFields sample_fields(uint8_t opcode, bool ipv6, bool vlan, uint32_t payload_len);

// build_frame() into an exactly sized vector; throws unless it succeeds.
std::vector<uint8_t> build_or_throw(const wire::PacketFields& f, std::span<const uint8_t> payload,
                                    bool udp_checksum = false);

}  // namespace uroce::test
