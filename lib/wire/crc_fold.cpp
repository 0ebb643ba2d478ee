// SPDX-License-Identifier: BSD-3-Clause
#include "crc_fold.h"

#include <immintrin.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "uroce/wire/icrc.h"

// The fold's instructions, enabled per function so that the rest of the
// library keeps the portable baseline (-march); crc_fold_supported() checks
// the CPU before any of them runs. GCC and clang spell these the same.
#define UROCE_TARGET_FOLD __attribute__((target("avx512f,avx512bw,pclmul,vpclmulqdq")))

namespace uroce::wire::detail {
namespace {

// The folding constants of the reflected CRC-32, as in Intel's "Fast CRC
// Computation for Generic Polynomials Using PCLMULQDQ" (and Linux's
// crc32-pclmul): k(n) = bit-reflect64((x^n mod P) << 32) << 1. A 16-byte lane
// that ends d bits before the end of the data is moved to the end by
// multiplying its low half by k(d + 32) and its high half by k(d - 32).
constexpr uint64_t kPoly = 0x104C11DB7;  // x^32 + ... + 1, bit i = x^i

constexpr uint64_t xpow_mod(unsigned n) {
  uint64_t r = 1;
  for (unsigned i = 0; i < n; ++i) {
    r <<= 1;
    if (r & (uint64_t(1) << 32)) r ^= kPoly;
  }
  return r;
}

constexpr uint64_t reflect64(uint64_t v) {
  uint64_t r = 0;
  for (int i = 0; i < 64; ++i) r |= ((v >> i) & 1) << (63 - i);
  return r;
}

constexpr uint64_t k(unsigned n) { return reflect64(xpow_mod(n) << 32) << 1; }

// Both known values of the published tables, as a check of the above.
static_assert(k(128 + 32) == 0x1751997D0 && k(128 - 32) == 0x0CCAA009E && k(64) == 0x163CD6124);

// Lane constants of a 128-byte block: lane i (bytes 16i..16i+15) is folded
// by 128 * (7 - i) bits, and every lane by 64 more: that is the paper's
// last 64-bit fold done in the same multiply, so the sum is 96 bits wide
// and two steps shorter to reduce.
struct alignas(64) BlockConstants {
  uint64_t q[16];
};
constexpr BlockConstants make_block_constants() {
  BlockConstants c{};
  for (unsigned lane = 0; lane < 8; ++lane) {
    const unsigned d = 128 * (7 - lane) + 64;
    c.q[2 * lane] = k(d + 32);
    c.q[2 * lane + 1] = k(d - 32);
  }
  return c;
}
constexpr BlockConstants kBlock = make_block_constants();

// The initial register, XORed into the first 4 bytes of an n-byte span, is
// a lane of its own with 32 significant bits, 8n - 128 bits from the end
// (and 64 more, as above): its fold is one multiply by k(8n - 32).
struct RegConstants {
  uint64_t q[kCrcFoldMax + 1];
};
constexpr RegConstants make_reg_constants() {
  RegConstants c{};
  for (unsigned n = kCrcFoldMin; n <= kCrcFoldMax; ++n) c.q[n] = k(8 * n - 32);
  return c;
}
constexpr RegConstants kReg = make_reg_constants();

constexpr uint64_t kMu = 0x1F7011641;      // floor(x^64 / P), reflected (Barrett)
constexpr uint64_t kPolyRefl = 0x1DB710641;  // P reflected, with its x^32 term

// 96 bits of folded state to the CRC register: fold to 64 bits, then
// Barrett reduction (the Intel paper's final steps).
UROCE_TARGET_FOLD uint32_t reduce96(__m128i x) {
  const __m128i mask32 = _mm_set_epi32(0, 0, 0, -1);
  x = _mm_xor_si128(_mm_srli_si128(x, 4),
                    _mm_clmulepi64_si128(_mm_and_si128(x, mask32), _mm_set_epi64x(0, int64_t(k(64))), 0x00));
  const __m128i barrett = _mm_set_epi64x(int64_t(kMu), int64_t(kPolyRefl));
  __m128i t = _mm_and_si128(_mm_clmulepi64_si128(_mm_and_si128(x, mask32), barrett, 0x10), mask32);
  t = _mm_clmulepi64_si128(t, barrett, 0x00);
  return uint32_t(_mm_extract_epi32(_mm_xor_si128(x, t), 1));
}

// The 64 bytes that end at `end`, of which only the last `valid` are
// loaded (the rest read as zero, the same as leading zeros of the CRC).
const void* block_start(const uint8_t* end) { return reinterpret_cast<const void*>(reinterpret_cast<uintptr_t>(end) - 64); }

UROCE_TARGET_FOLD __m512i load_tail(const uint8_t* end, size_t valid, const uint8_t* or_end) {
  const __mmask64 m = valid >= 64 ? ~__mmask64(0) : ~__mmask64(0) << (64 - valid);
  __m512i z = _mm512_maskz_loadu_epi8(m, block_start(end));
  if (or_end != nullptr) z = _mm512_or_si512(z, _mm512_maskz_loadu_epi8(m, block_start(or_end)));
  return z;
}

// Lanes of z folded to the end of the block with constants c, XORed.
UROCE_TARGET_FOLD __m512i fold_lanes(__m512i z, const uint64_t* c) {
  const __m512i kc = _mm512_load_si512(c);
  return _mm512_xor_si512(_mm512_clmulepi64_epi128(z, kc, 0x00), _mm512_clmulepi64_epi128(z, kc, 0x11));
}

UROCE_TARGET_FOLD uint32_t fold_avx512(uint32_t crc, const uint8_t* p, size_t n, const uint8_t* or_mask) {
  // Right-aligned in a 128-byte block (or the upper half alone when n <= 64).
  const __m512i hi = load_tail(p + n, n, or_mask ? or_mask + n : nullptr);
  __m512i acc = fold_lanes(hi, kBlock.q + 8);
  if (n > 64) {
    const __m512i lo = load_tail(p + n - 64, n - 64, or_mask ? or_mask + n - 64 : nullptr);
    acc = _mm512_xor_si512(acc, fold_lanes(lo, kBlock.q));
  }
  // (The maskz forms: GCC 12 warns about the plain ones' undefined inputs.)
  const __m256i h =
      _mm256_xor_si256(_mm512_maskz_extracti64x4_epi64(0xF, acc, 0), _mm512_maskz_extracti64x4_epi64(0xF, acc, 1));
  __m128i v = _mm_xor_si128(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
  const __m128i reg = _mm_cvtsi32_si128(int(~crc));
  v = _mm_xor_si128(v, _mm_clmulepi64_si128(reg, _mm_set_epi64x(0, int64_t(kReg.q[n])), 0x00));
  return ~reduce96(v);
}

// The masked copy is one vectorisable OR: byte stores into the copy would
// stall the CRC's wide loads on store forwarding.
uint32_t fold_portable(uint32_t crc, const uint8_t* p, size_t n, const uint8_t* or_mask) {
  if (or_mask == nullptr) return crc32(crc, p, n);
  alignas(64) uint8_t buf[kCrcFoldMax];
  for (size_t i = 0; i < n; ++i) buf[i] = p[i] | or_mask[i];
  return crc32(crc, buf, n);
}

bool cpu_has_fold() {
  // Also needed when this runs before libgcc's own constructor; libgcc
  // (and compiler-rt) report AVX-512 only when the OS saves its state.
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("vpclmulqdq");
}

CrcFoldImpl initial_impl() {
  const char* note = nullptr;
  const CrcFoldImpl impl = choose_crc_fold_impl(std::getenv("UROCE_CRC_IMPL"), &note);
  if (note != nullptr) std::fprintf(stderr, "uroce: UROCE_CRC_IMPL: %s\n", note);
  return impl;
}

// Set once at load; set_crc_fold_impl() may change it. Relaxed atomic
// loads are plain loads on x86.
std::atomic<CrcFoldImpl> g_impl{initial_impl()};

}  // namespace

const char* crc_fold_impl_name(CrcFoldImpl impl) { return impl == CrcFoldImpl::avx512 ? "avx512" : "portable"; }

bool crc_fold_supported(CrcFoldImpl impl) { return impl == CrcFoldImpl::portable || cpu_has_fold(); }

CrcFoldImpl choose_crc_fold_impl(const char* env, const char** note) {
  const CrcFoldImpl best = crc_fold_supported(CrcFoldImpl::avx512) ? CrcFoldImpl::avx512 : CrcFoldImpl::portable;
  const auto say = [note](const char* why) {
    if (note != nullptr) *note = why;
  };
  say(nullptr);
  if (env == nullptr || *env == '\0' || std::strcmp(env, "auto") == 0) return best;
  for (CrcFoldImpl impl : kCrcFoldImpls) {
    if (std::strcmp(env, crc_fold_impl_name(impl)) != 0) continue;
    if (crc_fold_supported(impl)) return impl;
    say("this CPU lacks AVX-512F/BW, PCLMULQDQ or VPCLMULQDQ; using the portable CRC");
    return best;
  }
  say("unknown value (auto, portable or avx512); using the fastest CRC this CPU runs");
  return best;
}

CrcFoldImpl crc_fold_impl() { return g_impl.load(std::memory_order_relaxed); }

bool set_crc_fold_impl(CrcFoldImpl impl) {
  if (!crc_fold_supported(impl)) return false;
  g_impl.store(impl, std::memory_order_relaxed);
  return true;
}

uint32_t crc32_fold_with(CrcFoldImpl impl, uint32_t crc, const uint8_t* p, size_t n, const uint8_t* or_mask) {
  return impl == CrcFoldImpl::avx512 ? fold_avx512(crc, p, n, or_mask) : fold_portable(crc, p, n, or_mask);
}

uint32_t crc32_fold(uint32_t crc, const uint8_t* p, size_t n, const uint8_t* or_mask) {
  return crc32_fold_with(g_impl.load(std::memory_order_relaxed), crc, p, n, or_mask);
}

}  // namespace uroce::wire::detail
