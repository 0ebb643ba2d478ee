// SPDX-License-Identifier: BSD-3-Clause
// Helpers for the verbs/transport tests: two (or more) devices on a
// simulated wire with QPs made and connected by the shared fixture
// (tests/common/connected_pair.h), work-request builders and completion
// waiting in virtual time.
#pragma once

#include <arpa/inet.h>

#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "../common/connected_pair.h"
#include "sim_fabric.h"
#include "uroce/verbs/verbs.h"

namespace uroce::vt {

using test::connect;
using test::init_attr;
using test::kAllAccess;
using test::kRcInitMask;
using test::kRcRtrMask;
using test::kRcRtsMask;
using test::make_qp;
using test::make_wr;
using test::post;
using test::post_atomic;
using test::post_recv;
using test::post_wr;
using test::rtr_attr;
using test::rts_attr;
using test::with_psn;

inline constexpr uint64_t kSecond = 1'000'000'000ull;

// One end's options (tests/common/connected_pair.h), with an 8192-entry CQ.
struct Opts : test::QpOptions {
  Opts() { cq_entries = 8192; }
};

inline DeviceConfig small_device() {
  DeviceConfig c;
  c.mbufs = 4095;
  return c;
}

// One side: device, PD, CQ, a registered buffer, a QP.
using Node = test::PairSide;

inline Node make_node(Device& dev, const Opts& o) { return test::make_side(dev, o); }

inline std::vector<ibv_wc> drain(CompletionQueue& cq) {
  std::vector<ibv_wc> got;
  ibv_wc wc[32];
  int k;
  while ((k = cq.poll(32, wc)) > 0) got.insert(got.end(), wc, wc + k);
  return got;
}

// Runs the fabric until `n` completions were polled from `cq` (or max_ns of
// virtual time passed / nothing can happen any more).
inline std::vector<ibv_wc> wait_cq(sim::SimFabric& f, CompletionQueue& cq, size_t n, uint64_t max_ns = 5 * kSecond) {
  std::vector<ibv_wc> got;
  f.run_until(
      [&] {
        auto more = drain(cq);
        got.insert(got.end(), more.begin(), more.end());
        return got.size() >= n;
      },
      max_ns);
  return got;
}

// Two devices (10.0.0.1 = a, 10.0.0.2 = b) with a connected RC QP each.
// a sends from PSN 0xFFFFF0 by default, so every test crosses the 2^24 wrap.
struct Pair {
  explicit Pair(uint64_t seed_ = 1, Opts oa = default_a(), Opts ob = default_b(), uint16_t mtu = 1500,
                const char* ip_a = "10.0.0.1", const char* ip_b = "10.0.0.2")
      : seed(seed_), fabric(seed_, mtu), optsa(oa), optsb(ob) {
    Device& da = fabric.add_device(ip_a, small_device());
    Device& db = fabric.add_device(ip_b, small_device());
    test::connect_pair(a, da, oa, b, db, ob);
  }
  static Opts default_a() {
    Opts o;
    o.sq_psn = 0xFFFFF0;
    return o;
  }
  static Opts default_b() {
    Opts o;
    o.sq_psn = 0x000100;
    return o;
  }

  std::vector<ibv_wc> wait(Node& n, size_t count, uint64_t max_ns = 5 * kSecond) {
    return wait_cq(fabric, *n.cq, count, max_ns);
  }
  void run_for(uint64_t ns) { fabric.run_for(ns); }
  uint64_t now() { return fabric.clock().now_ns(); }
  sim::SimPort& port_a() { return fabric.port(0); }
  sim::SimPort& port_b() { return fabric.port(1); }

  uint64_t seed;
  sim::SimFabric fabric;
  Opts optsa, optsb;
  Node a, b;
};

// Fills [p, p+n) with a pattern that depends on `salt`.
inline void fill(uint8_t* p, size_t n, uint32_t salt) {
  for (size_t i = 0; i < n; ++i) p[i] = uint8_t((i * 131 + salt * 7 + (i >> 8)) ^ salt);
}

inline ibv_sge sge(const Node& n, size_t off, uint32_t len) { return ibv_sge{n.addr(off), len, n.key()}; }

inline int post_send(Node& n, uint64_t wr_id, size_t off, uint32_t len, unsigned flags = IBV_SEND_SIGNALED) {
  return post_wr(n, IBV_WR_SEND, wr_id, off, len, 0, 0, flags);
}

inline uint64_t load64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}
inline void store64(uint8_t* p, uint64_t v) { std::memcpy(p, &v, 8); }

}  // namespace uroce::vt
