// CRC-32 primitives behind the ICRC, checked against zlib itself.
#include <sys/mman.h>
#include <unistd.h>
#include <zlib.h>

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

TEST_CASE("crc32_fold equals zlib's crc32 for every length it takes, with and without an OR mask", "[icrc]") {
  for (size_t n = detail::kCrcFoldMin; n <= detail::kCrcFoldMax; ++n) {
    INFO("length " << n);
    const auto data = random_bytes(n + 1, uint32_t(n) + 1000);
    const auto mask = random_bytes(n, uint32_t(n) + 2000);
    std::vector<uint8_t> ored(n);
    for (size_t i = 0; i < n; ++i) ored[i] = data[i + 1] | mask[i];
    for (uint32_t crc : {0u, 0xFFFFFFFFu, kIcrcSeed, 0x9E3779B9u}) {
      CHECK(detail::crc32_fold(crc, data.data() + 1, n, nullptr) ==
            uint32_t(::crc32(crc, data.data() + 1, uInt(n))));
      CHECK(detail::crc32_fold(crc, data.data() + 1, n, mask.data()) == zlib_crc(crc, ored));
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
  for (size_t n : {size_t(16), size_t(44), size_t(64), size_t(65), size_t(128)}) {
    INFO("length " << n);
    const uint8_t* at_start = first;
    const uint8_t* at_end = first + page - n;
    CHECK(detail::crc32_fold(kIcrcSeed, at_start, n, at_end) ==
          [&] {
            std::vector<uint8_t> v(n);
            for (size_t i = 0; i < n; ++i) v[i] = at_start[i] | at_end[i];
            return zlib_crc(kIcrcSeed, v);
          }());
    CHECK(detail::crc32_fold(kIcrcSeed, at_end, n, at_start) ==
          [&] {
            std::vector<uint8_t> v(n);
            for (size_t i = 0; i < n; ++i) v[i] = at_end[i] | at_start[i];
            return zlib_crc(kIcrcSeed, v);
          }());
  }
  munmap(base, 3 * page);
}
