// SPDX-License-Identifier: BSD-3-Clause
// Memory keys: unguessable (random upper bits), unique, dead once the
// region or window is gone, and 0 never valid; region and window keys
// never mistaken for each other.
#include <catch2/catch.hpp>

#include <cerrno>
#include <memory>
#include <set>
#include <vector>

#include "engine/engine.h"
#include "verbs/access.h"
#include "memory/mr_table.h"
#include "verbs_test_util.h"

using namespace uroce;

TEST_CASE("MR keys: unique, random upper half, dead after dereg, 0 never valid", "[units]") {
  sim::SimFabric fabric(11);
  Device& dev = fabric.add_device("10.0.0.1", vt::small_device());
  auto pd = dev.alloc_pd();
  const memory::MrTable& mrs = uroce::detail::to_engine(dev).mrs();
  std::vector<uint8_t> mem(4096);

  std::vector<std::unique_ptr<MemoryRegion>> regions;
  std::set<uint32_t> keys, uppers, slots;
  const int n = 3000;
  for (int i = 0; i < n; ++i) {
    int err = -1;
    auto mr = pd->reg_mr(mem.data(), mem.size(), IBV_ACCESS_LOCAL_WRITE, err);
    REQUIRE(err == 0);
    CHECK(mr->lkey() == mr->rkey());
    CHECK(mr->lkey() != 0);
    CHECK(mrs.find(mr->lkey()) == &uroce::detail::to_region(*mr));
    keys.insert(mr->lkey());
    uppers.insert(mr->lkey() >> 16);
    slots.insert(mr->lkey() & 0xFFFF);
    regions.push_back(std::move(mr));
  }
  CHECK(keys.size() == size_t(n));  // no two keys equal
  for (uint32_t k : keys) CHECK_FALSE(memory::is_window_key(k));
  // 3000 draws of 15 random bits: a few percent collide at most.
  CHECK(uppers.size() > size_t(n) * 9 / 10);
  CHECK(mrs.find(0) == nullptr);
  // Slot 0 with any upper half is never a key.
  for (uint32_t up : {0x0001u, 0x1234u, 0xFFFFu}) CHECK(mrs.find(up << 16) == nullptr);

  // A key with the right slot and a wrong upper half is rejected.
  const uint32_t k0 = regions[10]->lkey();
  for (uint32_t flip : {0x00010000u, 0x80000000u, 0xFFFF0000u}) CHECK(mrs.find(k0 ^ flip) == nullptr);

  // Deregistered: the key is gone, and stays gone when the slot is reused.
  std::vector<uint32_t> dead;
  for (int i = 0; i < 100; ++i) {
    dead.push_back(regions[size_t(i)]->lkey());
    REQUIRE(pd->dereg_mr(regions[size_t(i)]) == 0);
    CHECK(regions[size_t(i)] == nullptr);
  }
  for (uint32_t k : dead) CHECK(mrs.find(k) == nullptr);
  std::vector<std::unique_ptr<MemoryRegion>> again;
  for (int i = 0; i < 100; ++i) {
    int err = -1;
    again.push_back(pd->reg_mr(mem.data(), mem.size(), IBV_ACCESS_LOCAL_WRITE, err));
    REQUIRE(err == 0);
    CHECK(keys.count(again.back()->lkey()) == 0);  // never a key handed out before
  }
  for (uint32_t k : dead) CHECK(mrs.find(k) == nullptr);
  again.clear();
  regions.clear();
}

TEST_CASE("The key table is bounded by max_mr", "[units]") {
  sim::SimFabric fabric(12);
  DeviceConfig cfg = vt::small_device();
  cfg.limits.max_mr = 4;
  Device& dev = fabric.add_device("10.0.0.1", cfg);
  auto pd = dev.alloc_pd();
  std::vector<uint8_t> mem(64);
  std::vector<std::unique_ptr<MemoryRegion>> regions;
  for (int i = 0; i < 4; ++i) {
    int err = -1;
    regions.push_back(pd->reg_mr(mem.data(), mem.size(), 0, err));
    REQUIRE(err == 0);
  }
  int err = 0;
  auto fifth = pd->reg_mr(mem.data(), mem.size(), 0, err);
  CHECK(err == ENOMEM);
  CHECK(fifth == nullptr);
  REQUIRE(pd->dereg_mr(regions[0]) == 0);
  auto again = pd->reg_mr(mem.data(), mem.size(), 0, err);
  CHECK(err == 0);
  CHECK(again != nullptr);
  again.reset();
  regions.clear();
}

TEST_CASE("MrTable alone: insert fails with 0 when full", "[units]") {
  memory::MrTable t(99, 3);
  std::vector<uint32_t> keys;
  for (int i = 0; i < 3; ++i) keys.push_back(t.insert(nullptr));
  for (uint32_t k : keys) CHECK(k != 0);
  CHECK(t.insert(nullptr) == 0);
  CHECK(t.find(0) == nullptr);
}

TEST_CASE("Window keys: bit 31 set, slot in bits 8..23, consumer byte free; never a region's", "[units]") {
  memory::MrTable t(7, 4, 3);
  memory::Region r;
  r.key = t.insert(&r);
  REQUIRE(r.key != 0);
  memory::Window w[3];
  std::set<uint32_t> slots;
  for (auto& x : w) {
    x.key = t.insert_window(&x);
    REQUIRE(x.key != 0);
    CHECK(memory::is_window_key(x.key));
    slots.insert((x.key >> 8) & 0xFFFF);
    CHECK(t.find_window(x.key) == &x);
    CHECK(t.find(x.key) == nullptr);  // no local or region key
    // Another consumer byte names the same window, but not its current key.
    CHECK(t.find_window_slot(x.key ^ 0x5A) == &x);
    CHECK(t.find_window(x.key ^ 0x5A) == nullptr);
    // Another random part names nothing.
    CHECK(t.find_window_slot(x.key ^ 0x01000000u) == nullptr);
  }
  CHECK(slots.size() == 3);
  memory::Window extra;
  CHECK(t.insert_window(&extra) == 0);  // max_mw
  CHECK(t.find_window(r.key) == nullptr);
  t.remove_window(&w[1]);
  CHECK(t.find_window(w[1].key) == nullptr);
  CHECK(t.find_window(w[0].key) == &w[0]);
}

TEST_CASE("Window scans reach every live window: a freed slot is handed out before a new one", "[units]") {
  memory::MrTable t(9, 4, 16);
  memory::Region r;
  r.key = t.insert(&r);
  REQUIRE(r.key != 0);
  const auto* pd = reinterpret_cast<const ProtectionDomain*>(uintptr_t(0x1000));  // compared, never followed
  const auto slot = [](const memory::Window& x) { return (x.key >> 8) & 0xFFFF; };
  memory::Window w[8];
  for (int i = 0; i < 6; ++i) {
    w[i].key = t.insert_window(&w[i]);
    REQUIRE(w[i].key != 0);
  }
  t.remove_window(&w[1]);
  t.remove_window(&w[4]);
  w[6].key = t.insert_window(&w[6]);
  w[7].key = t.insert_window(&w[7]);
  std::set<uint32_t> used;
  for (int i : {0, 2, 3, 5, 6, 7}) used.insert(slot(w[i]));
  CHECK(used.size() == 6);
  CHECK(*used.rbegin() == 6);  // never more slots than windows alive at once
  // Type 2 windows bound through QP 0x11 in the highest slot and in reused
  // ones, and one through QP 0x22.
  for (int i : {5, 6, 7, 0}) {
    w[i].type = 2;
    w[i].pd = pd;
    w[i].mr = &r;
    w[i].qpn = i == 0 ? 0x22 : 0x11;
    ++r.windows;
  }
  t.unbind_windows_of_qp(pd, 0x11);
  CHECK(w[5].mr == nullptr);
  CHECK(w[6].mr == nullptr);
  CHECK(w[7].mr == nullptr);
  CHECK(w[0].mr == &r);
  CHECK(r.windows == 1);
  t.unbind_windows_of(&r);
  CHECK(w[0].mr == nullptr);
  CHECK(r.windows == 0);
}
