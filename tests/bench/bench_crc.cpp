// SPDX-License-Identifier: BSD-3-Clause
// CRC-32 (the ICRC polynomial) throughput per implementation at 64 B, 1 KB
// and 4 KB. Each one must first agree with zlib's crc32(0, buf, n), the
// reference the ICRC is defined by (icrc.h), on the very buffer it hashes.
#include <rte_cpuflags.h>
#include <zlib.h>

#include <string>
#include <vector>

#include "bench.h"
#include "dpdk_crc.h"
#include "uroce/wire/icrc.h"

using namespace uroce::wire;

namespace {

constexpr size_t kSizes[] = {64, 1024, 4096};
// What the ICRC hashes besides the payload: an AETH/ImmDt/IETH, a RETH,
// the masked IPv4 + UDP + BTH copy.
constexpr size_t kHeaderSizes[] = {4, 16, 48};

std::vector<uint8_t> test_buffer(size_t n) {
  std::vector<uint8_t> b(n);
  uint32_t x = 0x12345678;
  for (auto& byte : b) {
    x = x * 1664525u + 1013904223u;
    byte = uint8_t(x >> 24);
  }
  return b;
}

uint32_t zlib_reference(const std::vector<uint8_t>& b) {
  return uint32_t(::crc32(0L, b.data(), uInt(b.size())));
}

std::string label(const char* impl, size_t n) { return std::string(impl) + " " + std::to_string(n) + " B"; }

template <size_t N>
void bench_impl(CrcImpl impl, const char* name, const size_t (&sizes)[N]) {
  REQUIRE(crc32_impl_available(impl));
  for (size_t n : sizes) {
    const auto buf = test_buffer(n);
    REQUIRE(crc32_with(impl, 0, buf.data(), n) == zlib_reference(buf));
    BENCHMARK(label(name, n).c_str()) { return crc32_with(impl, 0, buf.data(), n); };
  }
}

void bench_rte(rte_net_crc_alg alg, const char* name) {
  rte_net_crc_set_alg(alg);
  for (size_t n : kSizes) {
    const auto buf = test_buffer(n);
    REQUIRE(rte_net_crc_calc(buf.data(), uint32_t(n), RTE_NET_CRC32_ETH) == zlib_reference(buf));
    BENCHMARK(label(name, n).c_str()) { return rte_net_crc_calc(buf.data(), uint32_t(n), RTE_NET_CRC32_ETH); };
  }
}

}  // namespace

TEST_CASE("crc32 isa-l", "[bench][crc]") { bench_impl(CrcImpl::isal, "crc32_with(isal)", kSizes); }

TEST_CASE("crc32 zlib", "[bench][crc]") { bench_impl(CrcImpl::zlib, "crc32_with(zlib)", kSizes); }

TEST_CASE("crc32 header-sized spans", "[bench][crc]") {
  bench_impl(CrcImpl::isal, "crc32_with(isal)", kHeaderSizes);
  bench_impl(CrcImpl::zlib, "crc32_with(zlib)", kHeaderSizes);
}

TEST_CASE("rte_net_crc SSE42", "[bench][crc]") { bench_rte(RTE_NET_CRC_SSE42, "rte_net_crc SSE42"); }

TEST_CASE("rte_net_crc AVX512", "[bench][crc]") {
  // Without these rte_net_crc_set_alg() silently keeps SSE4.2 and the
  // figures below would be mislabelled.
  REQUIRE(rte_vect_get_max_simd_bitwidth() >= RTE_VECT_SIMD_512);
  if (rte_cpu_get_flag_enabled(RTE_CPUFLAG_AVX512F) != 1 || rte_cpu_get_flag_enabled(RTE_CPUFLAG_VPCLMULQDQ) != 1) {
    WARN("rte_net_crc AVX512 not measured: this CPU lacks AVX-512F or VPCLMULQDQ");
    return;
  }
  bench_rte(RTE_NET_CRC_AVX512, "rte_net_crc AVX512");
}
