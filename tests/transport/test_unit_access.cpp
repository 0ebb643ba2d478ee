// SPDX-License-Identifier: BSD-3-Clause
// memory::resolve, the check in front of every memory access: key, PD,
// access right, bounds (with overflow), zero length.
#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

#include "engine/engine.h"
#include "verbs/access.h"
#include "memory/access.h"
#include "verbs_test_util.h"

using namespace uroce;
using memory::AccessError;

namespace {

struct AccessFixture {
  AccessFixture() : fabric(21) {
    Device& dev = fabric.add_device("10.0.0.1", vt::small_device());
    mrs = &uroce::detail::to_engine(dev).mrs();
    pd1 = dev.alloc_pd();
    pd2 = dev.alloc_pd();
    int err = -1;
    rw = pd1->reg_mr(mem.data(), mem.size(), IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE, err);
    REQUIRE(err == 0);
    ro = pd1->reg_mr(mem.data(), mem.size(), IBV_ACCESS_REMOTE_READ, err);
    REQUIRE(err == 0);
    base = reinterpret_cast<uintptr_t>(mem.data());
  }
  uint8_t* resolve(uint32_t key, uint64_t va, uint64_t len, int access, AccessError& e,
                   const ProtectionDomain* pd = nullptr) {
    return memory::resolve(*mrs, pd ? pd : pd1.get(), key, va, len, access, e);
  }

  std::vector<uint8_t> mem = std::vector<uint8_t>(4096);
  sim::SimFabric fabric;
  const memory::MrTable* mrs = nullptr;
  std::unique_ptr<ProtectionDomain> pd1, pd2;
  std::unique_ptr<MemoryRegion> rw, ro;
  uint64_t base = 0;
};

}  // namespace

TEST_CASE("resolve accepts a valid access and returns the host pointer", "[units]") {
  AccessFixture f;
  AccessError e = AccessError::bad_key;
  CHECK(f.resolve(f.rw->rkey(), f.base, 4096, IBV_ACCESS_REMOTE_WRITE, e) == f.mem.data());
  CHECK(e == AccessError::ok);
  CHECK(f.resolve(f.rw->rkey(), f.base + 100, 50, IBV_ACCESS_REMOTE_WRITE, e) == f.mem.data() + 100);
  CHECK(e == AccessError::ok);
  CHECK(f.resolve(f.rw->rkey(), f.base + 4095, 1, 0, e) == f.mem.data() + 4095);
  CHECK(e == AccessError::ok);
}

TEST_CASE("resolve rejects a bad key", "[units]") {
  AccessFixture f;
  AccessError e = AccessError::ok;
  CHECK(f.resolve(0, f.base, 8, 0, e) == nullptr);
  CHECK(e == AccessError::bad_key);
  CHECK(f.resolve(f.rw->rkey() ^ 0x00010000u, f.base, 8, 0, e) == nullptr);
  CHECK(e == AccessError::bad_key);
  CHECK(f.resolve((f.rw->rkey() & 0xFFFF0000u) | 0xFFFEu, f.base, 8, 0, e) == nullptr);
  CHECK(e == AccessError::bad_key);
}

TEST_CASE("resolve rejects a region of another PD", "[units]") {
  AccessFixture f;
  AccessError e = AccessError::ok;
  CHECK(f.resolve(f.rw->rkey(), f.base, 8, IBV_ACCESS_REMOTE_WRITE, e, f.pd2.get()) == nullptr);
  CHECK(e == AccessError::pd_mismatch);
}

TEST_CASE("resolve rejects a missing access right", "[units]") {
  AccessFixture f;
  AccessError e = AccessError::ok;
  CHECK(f.resolve(f.ro->rkey(), f.base, 8, IBV_ACCESS_REMOTE_WRITE, e) == nullptr);
  CHECK(e == AccessError::no_permission);
  CHECK(f.resolve(f.ro->rkey(), f.base, 8, IBV_ACCESS_LOCAL_WRITE, e) == nullptr);
  CHECK(e == AccessError::no_permission);
  CHECK(f.resolve(f.rw->rkey(), f.base, 8, IBV_ACCESS_REMOTE_READ, e) == nullptr);
  CHECK(e == AccessError::no_permission);
  CHECK(f.resolve(f.rw->rkey(), f.base, 8, IBV_ACCESS_REMOTE_ATOMIC, e) == nullptr);
  CHECK(e == AccessError::no_permission);
  // Both rights needed, one held.
  CHECK(f.resolve(f.rw->rkey(), f.base, 8, IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ, e) == nullptr);
  CHECK(e == AccessError::no_permission);
  CHECK(f.resolve(f.ro->rkey(), f.base, 8, IBV_ACCESS_REMOTE_READ, e) != nullptr);
  CHECK(e == AccessError::ok);
}

TEST_CASE("resolve rejects out-of-bounds ranges, overflow included", "[units]") {
  AccessFixture f;
  const uint32_t k = f.rw->rkey();
  struct Case {
    uint64_t va, len;
  };
  const Case bad[] = {
      {f.base - 1, 1},                       // starts before
      {f.base - 1, 4097},                    // starts before, ends at the end
      {f.base + 4096, 1},                    // starts at the end
      {f.base + 1, 4096},                    // one past the end
      {f.base, 4097},                        // too long
      {f.base + 4000, 200},                  // crosses the end
      {UINT64_MAX - 3, 8},                   // wraps the address space
      {f.base, UINT64_MAX},                  // huge length
      {f.base + 8, UINT64_MAX - 7},          // va + len wraps to base
      {f.base + 4095, UINT64_MAX - 4094},    // va + len wraps to exactly the end
      {0, 8},                                // nowhere near
  };
  for (const Case& c : bad) {
    INFO("va base+" << int64_t(c.va - f.base) << " len " << c.len);
    AccessError e = AccessError::ok;
    CHECK(f.resolve(k, c.va, c.len, IBV_ACCESS_REMOTE_WRITE, e) == nullptr);
    CHECK(e == AccessError::out_of_bounds);
  }
}

TEST_CASE("resolve of zero bytes needs no key", "[units]") {
  AccessFixture f;
  AccessError e = AccessError::bad_key;
  f.resolve(0, f.base + 77, 0, IBV_ACCESS_REMOTE_WRITE, e);
  CHECK(e == AccessError::ok);
  e = AccessError::bad_key;
  f.resolve(0xDEADBEEF, 0, 0, IBV_ACCESS_REMOTE_READ, e);
  CHECK(e == AccessError::ok);
  e = AccessError::bad_key;
  f.resolve(f.ro->rkey(), f.base + 10000, 0, IBV_ACCESS_REMOTE_WRITE, e, f.pd2.get());
  CHECK(e == AccessError::ok);
}
