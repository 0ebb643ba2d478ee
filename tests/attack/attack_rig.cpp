// SPDX-License-Identifier: BSD-3-Clause
#include "attack_rig.h"

#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>

namespace uroce::attack {
namespace {

constexpr uint8_t kCanary = 0xC5;
using Clock = std::chrono::steady_clock;

wire::IpAddr ip(const char* text) {
  wire::IpAddr a;
  REQUIRE(wire::IpAddr::parse(text, a));
  return a;
}

size_t page() { return size_t(sysconf(_SC_PAGESIZE)); }

}  // namespace

std::string RigConfig::label() const {
  return std::string(ipv6 ? "IPv6" : "IPv4") + " pmtu " + (mtu == IBV_MTU_4096 ? "4096" : "1024") +
         (threaded ? " threaded" : " embedded") + (seg ? " segmented" : " contiguous") +
         (zero_copy ? " zero-copy" : " copy");
}

GuardedRegion::GuardedRegion(ProtectionDomain& pd, size_t len, int access) : len_(len) {
  const size_t pg = page();
  // 64 canary bytes before the region at least; the rest of the last page after it.
  body_len_ = (len + 128 + pg - 1) / pg * pg;
  map_len_ = body_len_ + 2 * pg;
  void* m = mmap(nullptr, map_len_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  REQUIRE(m != MAP_FAILED);
  map_ = static_cast<uint8_t*>(m);
  REQUIRE(mprotect(map_, pg, PROT_NONE) == 0);
  REQUIRE(mprotect(map_ + pg + body_len_, pg, PROT_NONE) == 0);
  body_ = map_ + pg;
  data_ = body_ + 64;
  std::memset(body_, kCanary, body_len_);
  for (size_t i = 0; i < len_; ++i) data_[i] = uint8_t(i * 7 + 3);
  int err = -1;
  mr_ = pd.reg_mr(data_, len_, access, err);
  INFO("reg_mr errno " << err);
  REQUIRE(mr_);
  snapshot();
}

GuardedRegion::~GuardedRegion() {
  mr_.reset();
  munmap(map_, map_len_);
}

long GuardedRegion::canary_damage() const {
  for (size_t i = 0; i < body_len_; ++i) {
    const uint8_t* p = body_ + i;
    if (p >= data_ && p < data_ + len_) continue;
    if (*p != kCanary) return long(i);
  }
  return -1;
}

void GuardedRegion::snapshot() { snap_.assign(data_, data_ + len_); }

long GuardedRegion::changed_outside(size_t off, size_t len) const {
  for (size_t i = 0; i < len_; ++i) {
    if (i >= off && i < off + len) continue;
    if (data_[i] != snap_[i]) return long(i);
  }
  return -1;
}

void GuardedRegion::fill(uint8_t b, size_t off, size_t n) {
  std::memset(data_ + off, b, std::min(n, len_ - off));
}

Rig::Rig(const RigConfig& c) : cfg(c) {
  static std::atomic<unsigned> serial{0};
  pmtu = c.mtu == IBV_MTU_4096 ? 4096 : 1024;
  victim_ip = ip(c.ipv6 ? "fd09::2" : "10.9.0.2");
  peer_ip = ip(c.ipv6 ? "fd09::1" : "10.9.0.1");
  stranger_ip = ip(c.ipv6 ? "fd09::66" : "10.9.0.66");
  std::string error;
  // Room for a frame above the 4096 path MTU (the over-PMTU attacks).
  const uint16_t port_mtu = c.mtu == IBV_MTU_4096 ? 9000 : 1500;
  REQUIRE(open_ring_pair("atk" + std::to_string(serial.fetch_add(1)), port_mtu, vport, aport, error));
  DeviceConfig dc;
  dc.name = "victim";
  dc.port = vport.get();
  dc.clock = &clock;
  dc.gids = {victim_ip};
  dc.mbufs = 1023;
  dc.seed = 0xA77AC4;
  dc.zero_copy_min = c.zero_copy ? 64 : 0;
  dc.idle_sleep_max_us = 50;
  auto d = Device::open(dc, error);
  INFO(error);
  REQUIRE(d);
  dev = std::move(d);
  dev->add_neighbor(peer_ip, aport->mac());
  dev->add_neighbor(stranger_ip, aport->mac());
  if (c.threaded) {
    REQUIRE(dev->start_engine_thread(-1, error));
  }
}

Rig::~Rig() {
  if (dev && dev->engine_thread_running()) dev->stop_engine_thread();
  drain();
  dev.reset();
  drain();
}

void Rig::inject(const std::vector<uint8_t>& frame) {
  rte_mbuf* m = test::mbuf_from_bytes(pool.get(), frame, cfg.seg);
  REQUIRE(aport->tx_burst(&m, 1) == 1);
}

void Rig::poll_once() {
  if (!cfg.threaded) dev->poll();
}

void Rig::wait_rx(uint64_t before, uint64_t count) {
  if (!cfg.threaded) return;
  const auto deadline = Clock::now() + std::chrono::seconds(5);
  while (dev->counters().rx_frames < before + count && Clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::microseconds(20));
  REQUIRE(dev->counters().rx_frames >= before + count);
}

void Rig::run_for_us(uint64_t us) {
  const auto end = Clock::now() + std::chrono::microseconds(us);
  while (Clock::now() < end) {
    if (cfg.threaded) std::this_thread::sleep_for(std::chrono::microseconds(50));
    else poll_once();
  }
}

std::vector<Frame> Rig::collect(size_t n) {
  std::vector<Frame> got;
  const auto deadline = Clock::now() + std::chrono::seconds(5);
  int idle = 0;
  auto grace_end = Clock::time_point::max();
  for (;;) {
    rte_mbuf* rx[32];
    const uint16_t k = aport->rx_burst(rx, 32);
    for (uint16_t i = 0; i < k; ++i) {
      Frame f;
      f.bytes = test::mbuf_bytes(rx[i]);
      rte_pktmbuf_free(rx[i]);
      const wire::ParseError e = wire::parse_frame(f.bytes, f.v, wire::ParseOptions{});
      if (e == wire::ParseError::not_roce) continue;  // ARP/ND
      INFO("the victim sent a frame that does not parse: " << wire::to_string(e));
      CHECK(e == wire::ParseError::ok);
      if (e != wire::ParseError::ok) continue;
      got.push_back(std::move(f));
      got.back().v = {};
      REQUIRE(wire::parse_frame(got.back().bytes, got.back().v) == wire::ParseError::ok);
    }
    if (got.size() >= n) {
      if (cfg.threaded) {
        if (grace_end == Clock::time_point::max()) grace_end = Clock::now() + std::chrono::milliseconds(3);
        if (Clock::now() >= grace_end) break;
        std::this_thread::sleep_for(std::chrono::microseconds(50));
      } else {
        const int work = dev->poll();
        idle = (work == 0 && k == 0) ? idle + 1 : 0;
        if (idle >= 64) break;
      }
    } else {
      if (Clock::now() > deadline) break;
      if (cfg.threaded) std::this_thread::sleep_for(std::chrono::microseconds(20));
      else poll_once();
    }
  }
  return got;
}

void Rig::drain() {
  rte_mbuf* rx[32];
  uint16_t k;
  while ((k = aport->rx_burst(rx, 32)) > 0) rte_pktmbuf_free_bulk(rx, k);
}

}  // namespace uroce::attack
