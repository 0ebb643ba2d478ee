// CRC-32 primitives behind the ICRC, checked against zlib itself.
#include <zlib.h>

#include <random>
#include <vector>

#include "catch_printers.h"
#include "uroce/wire/icrc.h"

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
