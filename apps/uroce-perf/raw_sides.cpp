// SPDX-License-Identifier: BSD-3-Clause
#include "raw_sides.h"

#include <rte_mbuf.h>

#include <cstring>
#include <utility>

#include "raw_frame.h"

namespace uroce::perf {
namespace {

constexpr uint16_t kBurst = 32;

double seconds(CycleClock::duration d) { return std::chrono::duration<double>(d).count(); }

}  // namespace

RawSender::RawSender(PacketPort& port, rte_mempool* pool, const wire::MacAddr& dst, const Options& o, uint64_t size)
    : port_(port), pool_(pool), dst_(dst), o_(o), size_(size) {
  r_.size = size;
}

bool RawSender::step() {
  if (!started_) {
    started_ = true;
    t0_ = Clock::now();
  }
  if (o_.duration ? seconds(Clock::now() - t0_) >= o_.duration : sent_ >= o_.iters) return true;
  rte_mbuf* burst[kBurst];
  uint16_t n = 0;
  const uint64_t limit = o_.duration ? UINT64_MAX : o_.iters;
  while (n < kBurst && sent_ + n < limit && make_raw_frame(pool_, port_.mac(), dst_, size_, sent_ + n, burst[n])) ++n;
  const uint16_t k = port_.tx_burst(burst, n);
  for (uint16_t i = k; i < n; ++i) rte_pktmbuf_free(burst[i]);  // sent again with the same numbers
  sent_ += k;
  return false;
}

BwResult RawSender::finish() {
  r_.seconds = seconds(Clock::now() - t0_);
  r_.iters = sent_;
  r_.avg_bps = r_.peak_bps = double(sent_) * double(size_) / r_.seconds;
  r_.msg_rate = double(sent_) / r_.seconds;
  return r_;
}

void RawReceiver::step() {
  rte_mbuf* in[kBurst];
  const uint16_t got = port_.rx_burst(in, kBurst);
  for (uint16_t i = 0; i < got; ++i) {
    uint64_t seq;
    if (raw_frame_seq(in[i], seq)) {
      last_ = Clock::now();
      if (r_.iters++ == 0) first_ = last_;
      if (seq > next_) lost_ += seq - next_;  // dropped on the way: counted
      if (r_.error.empty() && seq >= next_) check_raw_frame(in[i], size_, seq, o_.verify, r_.error);
      else if (r_.error.empty()) r_.error = "raw frame " + std::to_string(seq) + " arrived out of order";
      next_ = seq + 1;
    }
    rte_pktmbuf_free(in[i]);
  }
}

BwResult RawReceiver::finish() {
  // The first frame starts the clock, so the rate covers iters - 1 gaps.
  r_.seconds = seconds(last_ - first_);
  const double frames = r_.iters > 1 ? double(r_.iters - 1) : 0;
  if (r_.seconds > 0) {
    r_.avg_bps = r_.peak_bps = frames * double(size_) / r_.seconds;
    r_.msg_rate = frames / r_.seconds;
  }
  return r_;
}

RawLatSide::~RawLatSide() { rte_pktmbuf_free(pending_); }

// The next raw_lat frame once it is here (with --raw-acks, once its ACK-sized
// frame is here too, whichever came first); nullptr until then.
rte_mbuf* RawLatSide::receive() {
  rte_mbuf* m;
  if (port_.rx_burst(&m, 1) == 0) return nullptr;
  uint64_t seq;
  if (!raw_frame_seq(m, seq)) {
    rte_pktmbuf_free(m);  // ARP and the like
    return nullptr;
  }
  if (is_ack_frame(m)) {
    rte_pktmbuf_free(m);
    if (!o_.raw_acks) return r_.error = "the peer sends ACK-sized frames: give --raw-acks to both sides", nullptr;
    ++r_.ack_frames;
    ack_seen_ = true;
    m = std::exchange(pending_, nullptr);
    if (m == nullptr) return nullptr;
  } else if (o_.raw_acks && !ack_seen_) {
    rte_pktmbuf_free(pending_);  // a frame without its ACK-sized one: the next one's turn
    pending_ = m;
    return nullptr;
  }
  ack_seen_ = false;
  return m;
}

RawLatSide::RawLatSide(PacketPort& port, rte_mempool* pool, const wire::MacAddr& dst, const Options& o,
                       uint64_t size, bool client)
    : port_(port), pool_(pool), dst_(dst), o_(o), size_(size), client_(client) {
  r_.size = size;
  if (client) r_.posted.reserve(o.iters);
}

bool RawLatSide::step() {
  if (iter_ >= o_.iters || !r_.error.empty()) return true;
  if (client_ && !waiting_) {
    rte_mbuf* m;
    if (!make_raw_frame(pool_, port_.mac(), dst_, size_, iter_, m)) return r_.error = "no mbuf for a raw frame", true;
    rte_mbuf* ack = nullptr;
    if (o_.raw_acks && !make_ack_frame(pool_, port_.mac(), dst_, ack)) {
      rte_pktmbuf_free(m);
      return r_.error = "no mbuf for a raw frame", true;
    }
    const uint64_t posted = Clock::cycles();
    if (!send_raw(port_, ack, m, 1)) return false;  // the link is full (or gone): again next step
    r_.posted.push_back(posted);
    waiting_ = true;
  }
  rte_mbuf* m = receive();
  if (m == nullptr) return false;
  check_raw_frame(m, size_, iter_, o_.verify, r_.error);
  if (client_) {
    ++r_.iters;
    rte_pktmbuf_free(m);
    waiting_ = false;
  } else {
    // Back where it came from, in the same buffer.
    auto* p = rte_pktmbuf_mtod(m, uint8_t*);
    std::memcpy(p, p + 6, 6);
    std::memcpy(p + 6, port_.mac().bytes.data(), 6);
    rte_mbuf* ack = nullptr;
    if (o_.raw_acks && !make_ack_frame(pool_, port_.mac(), dst_, ack)) {
      rte_pktmbuf_free(m);
      return r_.error = "no mbuf for a raw frame", true;
    }
    // Bounded: a peer that is gone must not hang us here (the watchdog
    // notices the missing frames instead).
    send_raw(port_, ack, m, 100000);
  }
  ++iter_;
  return iter_ >= o_.iters || !r_.error.empty();
}

}  // namespace uroce::perf
