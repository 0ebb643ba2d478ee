// SPDX-License-Identifier: BSD-3-Clause
// raw_bw / raw_lat between two processes: the client sends numbered
// frames straight to the port, the server counts them (bw) or sends each
// back (lat). Non-blocking steps, like bw.h and lat.h; the engines stay
// idle meanwhile (the frames are not RoCE).
#pragma once

#include <chrono>

#include "cycle_clock.h"
#include "runner.h"
#include "uroce/port/packet_port.h"
#include "uroce/wire/eth.h"

struct rte_mempool;

namespace uroce::perf {

class RawSender {
 public:
  RawSender(PacketPort& port, rte_mempool* pool, const wire::MacAddr& dst, const Options& o, uint64_t size);
  bool step();  // true when -n frames (or -D seconds) are out
  BwResult finish();
  const uint64_t* progress() const { return &sent_; }

 private:
  using Clock = CycleClock;
  PacketPort& port_;
  rte_mempool* pool_;
  wire::MacAddr dst_;
  const Options& o_;
  uint64_t size_;
  uint64_t sent_ = 0;
  bool started_ = false;
  Clock::time_point t0_;
  BwResult r_;
};

// Counts what arrives, from the first frame to the last; frames lost on
// the way are counted, not an error (raw Ethernet has no retransmission),
// but a frame out of order or damaged (--verify) is.
class RawReceiver {
 public:
  RawReceiver(PacketPort& port, const Options& o, uint64_t size) : port_(port), o_(o), size_(size) { r_.size = size; }
  void step();
  BwResult finish();
  uint64_t lost() const { return lost_; }
  const uint64_t* progress() const { return &r_.iters; }

 private:
  using Clock = CycleClock;
  PacketPort& port_;
  const Options& o_;
  uint64_t size_;
  uint64_t next_ = 0;
  uint64_t lost_ = 0;
  Clock::time_point first_, last_;
  BwResult r_;
};

// The client sends frame i and waits for it to come back; the server sends
// back what it receives, -n times.
class RawLatSide {
 public:
  RawLatSide(PacketPort& port, rte_mempool* pool, const wire::MacAddr& dst, const Options& o, uint64_t size,
             bool client);
  ~RawLatSide();
  RawLatSide(const RawLatSide&) = delete;
  RawLatSide& operator=(const RawLatSide&) = delete;
  bool step();
  LatResult finish() { return r_; }
  const uint64_t* progress() const { return &iter_; }

 private:
  using Clock = CycleClock;
  rte_mbuf* receive();
  PacketPort& port_;
  rte_mempool* pool_;
  wire::MacAddr dst_;
  const Options& o_;
  uint64_t size_;
  bool client_;
  bool waiting_ = false;
  bool ack_seen_ = false;        // --raw-acks: the ACK-sized frame of the next frame is here
  rte_mbuf* pending_ = nullptr;  // --raw-acks: a frame that came before its ACK-sized one
  uint64_t iter_ = 0;
  LatResult r_;
};

}  // namespace uroce::perf
