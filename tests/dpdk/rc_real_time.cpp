// SPDX-License-Identifier: BSD-3-Clause
#include "rc_real_time.h"

#include <rte_mempool.h>

#include <cstring>
#include <random>
#include <string>

namespace uroce::test {
namespace {

wire::IpAddr ip(const char* text) {
  wire::IpAddr a;
  REQUIRE(wire::IpAddr::parse(text, a));
  return a;
}

std::unique_ptr<Device> open_device(const char* name, PacketPort& port, Clock& clock, const char* gid,
                                    uint64_t seed, uint32_t idle_sleep_max_us) {
  DeviceConfig c;
  c.idle_sleep_max_us = idle_sleep_max_us;
  c.name = name;
  c.port = &port;
  c.clock = &clock;
  c.gids = {ip(gid)};
  c.mbufs = 4095;
  c.seed = seed;
  std::string error;
  auto dev = Device::open(c, error);
  INFO(error);
  REQUIRE(dev);
  return dev;
}

void fill(uint8_t* p, size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  for (size_t i = 0; i < n; ++i) p[i] = uint8_t(rng());
}

void check_wc(const ibv_wc& wc, uint64_t wr_id, ibv_wc_opcode op) {
  INFO("wr_id " << wc.wr_id << " status " << int(wc.status) << " opcode " << int(wc.opcode));
  CHECK(wc.status == IBV_WC_SUCCESS);
  CHECK(wc.wr_id == wr_id);
  CHECK(wc.opcode == op);
}

}  // namespace

RealTimePair::RealTimePair(PacketPort& pa, PacketPort& pb, uint64_t seed, QpOptions o, size_t bytes,
                           uint32_t idle_sleep_max_us) {
  da = open_device("uroce_a", pa, clock, "10.0.0.1", seed, idle_sleep_max_us);
  db = open_device("uroce_b", pb, clock, "10.0.0.2", seed + 1, idle_sleep_max_us);
  da->add_neighbor(ip("10.0.0.2"), pb.mac());
  db->add_neighbor(ip("10.0.0.1"), pa.mac());
  o.bytes = bytes;
  connect_pair(a, *da, with_psn(o, 0xFFFFF0), b, *db, with_psn(o, 0x000100));
}

RealTimePair::~RealTimePair() { quiesce(); }

bool RealTimePair::run_until(const std::function<bool()>& pred, Millis limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  for (unsigned i = 0;; ++i) {
    if (pred()) return true;
    da->poll();
    db->poll();
    if ((i & 255) == 0 && std::chrono::steady_clock::now() > deadline) return pred();
  }
}

std::vector<ibv_wc> RealTimePair::wait(Side& side, size_t n, Millis limit) {
  std::vector<ibv_wc> got;
  run_until(
      [&] {
        ibv_wc wc[16];
        int k;
        while ((k = side.cq->poll(16, wc)) > 0) got.insert(got.end(), wc, wc + k);
        return got.size() >= n;
      },
      limit);
  return got;
}

bool RealTimePair::quiesce(Millis idle, Millis limit) {
  const auto start = std::chrono::steady_clock::now();
  auto last_work = start;
  for (;;) {
    const auto now = std::chrono::steady_clock::now();
    if (da->poll() + db->poll() > 0) last_work = now;
    if (now - last_work >= idle) return true;
    if (now - start >= limit) return false;
  }
}

void check_send_write_read(RealTimePair& p, uint64_t seed) {
  INFO("seed " << seed);
  Side& a = p.a;
  Side& b = p.b;

  // SEND of 5000 bytes: several packets at any path MTU up to 4096.
  constexpr uint32_t kSend = 5000;
  fill(a.buf(), kSend, seed);
  std::memset(b.buf(), 0, 8192);
  REQUIRE(post_recv(b, 11, 0, 8192) == 0);
  REQUIRE(post_wr(a, IBV_WR_SEND, 1, 0, kSend) == 0);
  auto wa = p.wait(a, 1);
  auto wb = p.wait(b, 1);
  REQUIRE(wa.size() == 1);
  REQUIRE(wb.size() == 1);
  check_wc(wa[0], 1, IBV_WC_SEND);
  check_wc(wb[0], 11, IBV_WC_RECV);
  CHECK(wb[0].byte_len == kSend);
  CHECK(std::memcmp(a.buf(), b.buf(), kSend) == 0);
  CHECK(b.buf()[kSend] == 0);  // nothing written past the message

  // RDMA WRITE of 64 KiB from a+64K to b+128K.
  constexpr uint32_t kWrite = 64 * 1024;
  fill(a.buf() + (64 << 10), kWrite, seed + 1);
  std::memset(b.buf() + (128 << 10), 0, kWrite + 4096);
  REQUIRE(post_wr(a, IBV_WR_RDMA_WRITE, 2, 64 << 10, kWrite, b.addr(128 << 10), b.mr->rkey()) == 0);
  wa = p.wait(a, 1);
  REQUIRE(wa.size() == 1);
  check_wc(wa[0], 2, IBV_WC_RDMA_WRITE);
  CHECK(std::memcmp(a.buf() + (64 << 10), b.buf() + (128 << 10), kWrite) == 0);
  CHECK(b.buf()[(128 << 10) + kWrite] == 0);

  // RDMA READ of 48 KiB + 100 from b+256K into a+512K.
  constexpr uint32_t kRead = 48 * 1024 + 100;
  fill(b.buf() + (256 << 10), kRead, seed + 2);
  std::memset(a.buf() + (512 << 10), 0, kRead + 4096);
  REQUIRE(post_wr(a, IBV_WR_RDMA_READ, 3, 512 << 10, kRead, b.addr(256 << 10), b.mr->rkey()) == 0);
  wa = p.wait(a, 1);
  REQUIRE(wa.size() == 1);
  check_wc(wa[0], 3, IBV_WC_RDMA_READ);
  CHECK(wa[0].byte_len == kRead);
  CHECK(std::memcmp(b.buf() + (256 << 10), a.buf() + (512 << 10), kRead) == 0);
  CHECK(a.buf()[(512 << 10) + kRead] == 0);

  // The responder saw no completions of its own beyond the RECV.
  ibv_wc extra[4];
  CHECK(b.cq->poll(4, extra) == 0);
}

bool pools_full(const char* prefix, std::vector<std::string>& leaks) {
  struct Ctx {
    const char* prefix;
    std::vector<std::string>* leaks;
    int seen = 0;
  } ctx{prefix, &leaks};
  rte_mempool_walk(
      [](rte_mempool* mp, void* arg) {
        auto* c = static_cast<Ctx*>(arg);
        if (std::strncmp(mp->name, c->prefix, std::strlen(c->prefix)) != 0) return;
        ++c->seen;
        const unsigned avail = rte_mempool_avail_count(mp);
        if (avail != mp->size)
          c->leaks->push_back(std::string(mp->name) + ": " + std::to_string(avail) + "/" + std::to_string(mp->size));
      },
      &ctx);
  return ctx.seen > 0 && leaks.empty();
}

}  // namespace uroce::test
