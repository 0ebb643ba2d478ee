// SPDX-License-Identifier: BSD-3-Clause
// CRC-32 primitives behind the ICRC, checked against zlib itself.
#include <sys/mman.h>
#include <unistd.h>
#include <zlib.h>

#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "catch_printers.h"
#include "uroce/wire/icrc.h"
#include "wire/crc_fold.h"

using namespace uroce::wire;

namespace {

std::vector<uint8_t> random_bytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = uint8_t(rng());
  return v;
}

uint32_t zlib_crc(uint32_t crc, const std::vector<uint8_t>& v) {
  return uint32_t(::crc32(crc, v.data(), uInt(v.size())));
}

uint32_t zlib_crc_ored(uint32_t crc, const uint8_t* p, const uint8_t* mask, size_t n) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = p[i] | mask[i];
  return zlib_crc(crc, v);
}

// Every small-span CRC implementation this CPU runs; the others are
// reported as skipped, so a run without AVX-512 says what it did not test.
std::vector<detail::CrcFoldImpl> runnable_fold_impls() {
  std::vector<detail::CrcFoldImpl> impls;
  for (detail::CrcFoldImpl impl : detail::kCrcFoldImpls) {
    if (detail::crc_fold_supported(impl)) {
      impls.push_back(impl);
    } else {
      WARN("crc32_fold " << detail::crc_fold_impl_name(impl)
                         << " not tested: this CPU lacks AVX-512F/BW, PCLMULQDQ or VPCLMULQDQ");
    }
  }
  return impls;
}

// Puts back the load-time choice after a test forced one.
struct RestoreFoldImpl {
  detail::CrcFoldImpl saved = detail::crc_fold_impl();
  ~RestoreFoldImpl() { detail::set_crc_fold_impl(saved); }
};

}  // namespace

TEST_CASE("crc32 equals zlib's crc32 for many lengths", "[icrc]") {
  std::vector<size_t> lengths;
  for (size_t n = 0; n <= 300; ++n) lengths.push_back(n);
  lengths.insert(lengths.end(), {4096, 65536});
  for (size_t n : lengths) {
    INFO("length " << n);
    // One byte in front so the data is not always 16-byte aligned.
    const auto buf = random_bytes(n + 1, uint32_t(n));
    const uint8_t* data = buf.data() + 1;  // never null: zlib treats null as "give the initial value"
    CHECK(crc32(0, data, n) == uint32_t(::crc32(0, data, uInt(n))));
    CHECK(crc32(0x12345678, data, n) == uint32_t(::crc32(0x12345678, data, uInt(n))));
  }
}

TEST_CASE("crc32 continues across pieces", "[icrc]") {
  const auto all = random_bytes(5000, 7);
  const uint32_t whole = zlib_crc(0, all);
  for (size_t cut : {size_t(0), size_t(1), size_t(7), size_t(64), size_t(1023), size_t(4999), size_t(5000)}) {
    INFO("cut " << cut);
    CHECK(crc32(crc32(0, all.data(), cut), all.data() + cut, all.size() - cut) == whole);
  }
}

TEST_CASE("every CRC implementation agrees with zlib", "[icrc]") {
  REQUIRE(crc32_impl_available(CrcImpl::zlib));
  const auto data = random_bytes(70000, 99);
  for (size_t n : {size_t(0), size_t(1), size_t(15), size_t(16), size_t(17), size_t(255), size_t(4096),
                   size_t(70000)}) {
    INFO("length " << n);
    const uint32_t want = uint32_t(::crc32(0, data.data(), uInt(n)));
    CHECK(crc32_with(CrcImpl::zlib, 0, data.data(), n) == want);
    if (crc32_impl_available(CrcImpl::isal)) {
      CHECK(crc32_with(CrcImpl::isal, 0, data.data(), n) == want);
      CHECK(crc32_with(CrcImpl::isal, kIcrcSeed, data.data(), n) ==
            crc32_with(CrcImpl::zlib, kIcrcSeed, data.data(), n));
    }
  }
  CHECK(crc32_impl_name() != nullptr);
}

TEST_CASE("the ICRC seed is zlib's CRC of the 8-byte LRH stand-in", "[icrc]") {
  const std::vector<uint8_t> lrh(8, 0xFF);
  CHECK(kIcrcSeed == zlib_crc(0, lrh));
  // rxe's starting value 0xDEBB20E3 is the same state before the final inversion.
  CHECK(~kIcrcSeed == 0xDEBB20E3u);
}

TEST_CASE("the portable small-span CRC runs everywhere", "[icrc]") {
  CHECK(detail::crc_fold_supported(detail::CrcFoldImpl::portable));
  CHECK(std::strcmp(detail::crc_fold_impl_name(detail::CrcFoldImpl::portable), "portable") == 0);
  CHECK(std::strcmp(detail::crc_fold_impl_name(detail::CrcFoldImpl::avx512), "avx512") == 0);
}

TEST_CASE("crc32_fold equals zlib's crc32 for every length it takes, with and without an OR mask", "[icrc]") {
  for (detail::CrcFoldImpl impl : runnable_fold_impls()) {
    INFO("implementation " << detail::crc_fold_impl_name(impl));
    for (size_t n = detail::kCrcFoldMin; n <= detail::kCrcFoldMax; ++n) {
      INFO("length " << n);
      const auto data = random_bytes(n + 1, uint32_t(n) + 1000);
      const auto mask = random_bytes(n, uint32_t(n) + 2000);
      std::vector<uint32_t> seeds = {0u, 0xFFFFFFFFu, kIcrcSeed, 0x9E3779B9u};
      std::mt19937 rng(uint32_t(n) + 3000);
      for (int i = 0; i < 8; ++i) seeds.push_back(uint32_t(rng()));
      for (uint32_t crc : seeds) {
        INFO("seed " << crc);
        CHECK(detail::crc32_fold_with(impl, crc, data.data() + 1, n, nullptr) ==
              uint32_t(::crc32(crc, data.data() + 1, uInt(n))));
        CHECK(detail::crc32_fold_with(impl, crc, data.data() + 1, n, mask.data()) ==
              zlib_crc_ored(crc, data.data() + 1, mask.data(), n));
      }
    }
  }
}

TEST_CASE("crc32_fold reads nothing outside its span and mask", "[icrc]") {
  // Each span sits right after an inaccessible page (the fold's loads start
  // up to 128 bytes before it, masked) and, in the second run, ends right
  // before one.
  const size_t page = size_t(sysconf(_SC_PAGESIZE));
  auto* base = static_cast<uint8_t*>(mmap(nullptr, 3 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  REQUIRE(base != MAP_FAILED);
  REQUIRE(mprotect(base, page, PROT_NONE) == 0);
  REQUIRE(mprotect(base + 2 * page, page, PROT_NONE) == 0);
  uint8_t* first = base + page;
  for (size_t i = 0; i < page; ++i) first[i] = uint8_t(i * 7 + 3);
  for (detail::CrcFoldImpl impl : runnable_fold_impls()) {
    INFO("implementation " << detail::crc_fold_impl_name(impl));
    for (size_t n : {size_t(16), size_t(44), size_t(64), size_t(65), size_t(128)}) {
      INFO("length " << n);
      const uint8_t* at_start = first;
      const uint8_t* at_end = first + page - n;
      CHECK(detail::crc32_fold_with(impl, kIcrcSeed, at_start, n, at_end) ==
            zlib_crc_ored(kIcrcSeed, at_start, at_end, n));
      CHECK(detail::crc32_fold_with(impl, kIcrcSeed, at_end, n, at_start) ==
            zlib_crc_ored(kIcrcSeed, at_end, at_start, n));
      CHECK(detail::crc32_fold_with(impl, kIcrcSeed, at_end, n, nullptr) == zlib_crc_ored(kIcrcSeed, at_end, at_end, n));
    }
  }
  munmap(base, 3 * page);
}

TEST_CASE("crc32_fold and icrc_masked_headers use the implementation set", "[icrc]") {
  const RestoreFoldImpl restore;
  // IPv4 + UDP + BTH + 64 bytes (one fold), IPv6 + UDP + BTH + 100 bytes
  // (past the fold's limit: the masked copy and crc32()).
  const auto frame = random_bytes(kIcrcMaxMaskedLen, 77);
  std::vector<uint8_t> v4(frame.begin(), frame.begin() + 20 + 8 + 12 + 64);
  std::vector<uint8_t> v4_masked = v4;
  for (size_t i : {1, 8, 10, 11, 26, 27, 32}) v4_masked[i] = 0xFF;
  std::vector<uint8_t> v6(frame.begin(), frame.begin() + 40 + 8 + 12 + 100);
  std::vector<uint8_t> v6_masked = v6;
  v6_masked[0] |= 0x0F;
  for (size_t i : {1, 2, 3, 7, 46, 47, 52}) v6_masked[i] = 0xFF;
  const auto mask = random_bytes(detail::kCrcFoldMax, 5);
  for (detail::CrcFoldImpl impl : runnable_fold_impls()) {
    INFO("implementation " << detail::crc_fold_impl_name(impl));
    REQUIRE(detail::set_crc_fold_impl(impl));
    CHECK(detail::crc_fold_impl() == impl);
    CHECK(detail::crc32_fold(0x1234, frame.data(), 100, mask.data()) ==
          detail::crc32_fold_with(impl, 0x1234, frame.data(), 100, mask.data()));
    CHECK(icrc_masked_headers(v4.data(), 20, false, 64) == zlib_crc(kIcrcSeed, v4_masked));
    CHECK(icrc_masked_headers(v6.data(), 40, true, 100) == zlib_crc(kIcrcSeed, v6_masked));
  }
}

TEST_CASE("UROCE_CRC_IMPL names the small-span CRC; an unusable value falls back with a note", "[icrc]") {
  using detail::CrcFoldImpl;
  const bool avx512 = detail::crc_fold_supported(CrcFoldImpl::avx512);
  const CrcFoldImpl best = avx512 ? CrcFoldImpl::avx512 : CrcFoldImpl::portable;
  const char* note = "unset";
  CHECK(detail::choose_crc_fold_impl(nullptr, &note) == best);
  CHECK(note == nullptr);
  CHECK(detail::choose_crc_fold_impl("", &note) == best);
  CHECK(detail::choose_crc_fold_impl("auto", &note) == best);
  CHECK(note == nullptr);
  CHECK(detail::choose_crc_fold_impl("portable", &note) == CrcFoldImpl::portable);
  CHECK(note == nullptr);
  CHECK(detail::choose_crc_fold_impl("avx512", &note) == best);
  CHECK((note == nullptr) == avx512);
  CHECK(detail::choose_crc_fold_impl("avx2", &note) == best);
  CHECK(note != nullptr);
  CHECK(detail::choose_crc_fold_impl("avx512", nullptr) == best);
  // Forcing what the CPU cannot run is refused and changes nothing.
  const RestoreFoldImpl restore;
  CHECK(detail::set_crc_fold_impl(CrcFoldImpl::avx512) == avx512);
  CHECK(detail::set_crc_fold_impl(CrcFoldImpl::portable));
  CHECK(detail::crc_fold_impl() == CrcFoldImpl::portable);
}

TEST_CASE("the small-span CRC chosen at load follows UROCE_CRC_IMPL", "[icrc][icrc-env]") {
  const char* env = std::getenv("UROCE_CRC_IMPL");
  INFO("UROCE_CRC_IMPL=" << (env ? env : "(unset)"));
  CHECK(detail::crc_fold_impl() == detail::choose_crc_fold_impl(env, nullptr));
  if (env != nullptr && std::strcmp(env, "portable") == 0) CHECK(detail::crc_fold_impl() == detail::CrcFoldImpl::portable);
}
