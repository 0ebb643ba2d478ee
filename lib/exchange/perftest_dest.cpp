// SPDX-License-Identifier: BSD-3-Clause
#include <cctype>
#include <algorithm>
#include <cstdio>

#include "uroce/exchange/perftest.h"
#include "uroce/wire/byte_order.h"

namespace uroce::exchange {

namespace {

// The record's fields in order: name and width in hex digits. Each is
// followed by ':' (KEY_PRINT_FMT_GID ends with "%08x:"), then the NUL.
struct Field {
  const char* name;
  int width;
};
constexpr Field kFields[] = {
    {"LID", 4}, {"OUT_READS", 4}, {"QPN", 6}, {"PSN", 6}, {"RKEY", 8}, {"VADDR", 16},
    {"GID[0]", 2}, {"GID[1]", 2}, {"GID[2]", 2}, {"GID[3]", 2}, {"GID[4]", 2}, {"GID[5]", 2},
    {"GID[6]", 2}, {"GID[7]", 2}, {"GID[8]", 2}, {"GID[9]", 2}, {"GID[10]", 2}, {"GID[11]", 2},
    {"GID[12]", 2}, {"GID[13]", 2}, {"GID[14]", 2}, {"GID[15]", 2}, {"SRQN", 8},
};
constexpr size_t kFieldCount = sizeof kFields / sizeof kFields[0];

constexpr size_t text_length() {
  size_t n = 0;
  for (const Field& f : kFields) n += size_t(f.width) + 1;
  return n;
}
static_assert(text_length() + 1 == kPerftestRecordSize, "107 characters and the NUL");

std::string shown(char c) {
  if (std::isprint(uint8_t(c))) return std::string("'") + c + "'";
  char buf[8];
  std::snprintf(buf, sizeof buf, "0x%02x", uint8_t(c));
  return buf;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

bool encode_perftest_dest(const PerftestDest& d, PerftestRecord& out, std::string& error) {
  if (d.lid > 0xffff || d.out_reads > 0xffff || d.qpn > 0xffffff || d.psn > 0xffffff) {
    char buf[160];
    std::snprintf(buf, sizeof buf,
                  "perftest record: a field exceeds its width (LID 0x%x and OUT_READS 0x%x max 0xffff, "
                  "QPN 0x%x and PSN 0x%x max 0xffffff)",
                  d.lid, d.out_reads, d.qpn, d.psn);
    error = buf;
    return false;
  }
  const auto& g = d.gid.bytes;
  int n = std::snprintf(out.data(), out.size(),
                        "%04x:%04x:%06x:%06x:%08x:%016llx:"
                        "%02x:%02x:%02x:%02x:%02x:%02x:%02x:%02x:%02x:%02x:%02x:%02x:%02x:%02x:%02x:%02x:%08x:",
                        d.lid, d.out_reads, d.qpn, d.psn, d.rkey, static_cast<unsigned long long>(d.vaddr), g[0],
                        g[1], g[2], g[3], g[4], g[5], g[6], g[7], g[8], g[9], g[10], g[11], g[12], g[13], g[14],
                        g[15], d.srqn);
  if (n != int(kPerftestRecordSize) - 1) {
    error = "perftest record: formatted " + std::to_string(n) + " characters instead of 107";
    return false;
  }
  return true;
}

bool decode_perftest_dest(const char* bytes, size_t len, PerftestDest& out, std::string& error) {
  if (len != kPerftestRecordSize) {
    error = "perftest record: " + std::to_string(len) + " bytes instead of 108";
    return false;
  }
  uint64_t values[kFieldCount] = {};
  size_t pos = 0;
  for (size_t f = 0; f < kFieldCount; ++f) {
    const Field& field = kFields[f];
    for (int i = 0; i < field.width; ++i, ++pos) {
      int v = hex_value(bytes[pos]);
      if (v < 0) {
        error = "perftest record byte " + std::to_string(pos) + ": " + shown(bytes[pos]) + " is not a hex digit (" +
                field.name + " has " + std::to_string(field.width) + ")";
        return false;
      }
      values[f] = values[f] << 4 | uint64_t(v);
    }
    if (bytes[pos] != ':') {
      error = "perftest record byte " + std::to_string(pos) + ": expected ':' after " + field.name + ", got " +
              shown(bytes[pos]);
      return false;
    }
    ++pos;
  }
  if (bytes[pos] != '\0') {
    error = "perftest record byte " + std::to_string(pos) + ": expected the terminating NUL, got " + shown(bytes[pos]);
    return false;
  }
  PerftestDest d;
  d.lid = uint32_t(values[0]);
  d.out_reads = uint32_t(values[1]);
  d.qpn = uint32_t(values[2]);
  d.psn = uint32_t(values[3]);
  d.rkey = uint32_t(values[4]);
  d.vaddr = values[5];
  for (int i = 0; i < 16; ++i) d.gid.bytes[size_t(i)] = uint8_t(values[6 + i]);
  d.srqn = uint32_t(values[22]);
  out = d;
  return true;
}

void encode_perftest_dest_binary(const PerftestDest& d, PerftestBinaryRecord& out) {
  out.fill(0);
  uint8_t* p = out.data();
  wire::store_be32(p + 0, d.lid);
  wire::store_be32(p + 4, d.out_reads);
  wire::store_be32(p + 8, d.qpn);
  wire::store_be32(p + 12, d.psn);
  wire::store_be32(p + 16, d.rkey);
  wire::store_be64(p + 24, d.vaddr);
  std::copy(d.gid.bytes.begin(), d.gid.bytes.end(), p + 32);
  wire::store_be32(p + 48, d.srqn);
  wire::store_be32(p + 52, d.gid_index);
}

namespace {

std::string hex_text(uint32_t v) {
  char buf[9];
  std::snprintf(buf, sizeof buf, "%x", v);
  return buf;
}

}  // namespace

bool decode_perftest_dest_binary(const uint8_t* p, size_t len, PerftestDest& out, std::string& error) {
  if (len != kPerftestBinaryRecordSize) {
    error = "perftest record: " + std::to_string(len) + " bytes instead of 56 (rdma_cm's binary struct pingpong_dest)";
    return false;
  }
  PerftestDest d;
  d.lid = wire::load_be32(p + 0);
  d.out_reads = wire::load_be32(p + 4);
  d.qpn = wire::load_be32(p + 8);
  d.psn = wire::load_be32(p + 12);
  d.rkey = wire::load_be32(p + 16);
  d.vaddr = wire::load_be64(p + 24);
  std::copy(p + 32, p + 48, d.gid.bytes.begin());
  d.srqn = wire::load_be32(p + 48);
  d.gid_index = wire::load_be32(p + 52);
  // The text record's digits cannot say more than 24 bits; these fields can.
  if (d.qpn > 0xffffff || d.psn > 0xffffff) {
    error = "perftest record: QP number 0x" + hex_text(d.qpn) + " or PSN 0x" + hex_text(d.psn) +
            " past 24 bits";
    return false;
  }
  out = d;
  return true;
}

}  // namespace uroce::exchange
