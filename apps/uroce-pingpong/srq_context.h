// SPDX-License-Identifier: BSD-3-Clause
// srq_pingpong's pingpong_context: -q RC QPs that share one CQ and one
// shared receive queue of -r receives, each connected to the peer's QP of
// the same index.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "endpoint.h"
#include "options.h"
#include "uroce/exchange/pingpong.h"
#include "uroce/verbs/verbs.h"

namespace uroce::pingpong {

class SrqContext {
 public:
  // srq_pingpong sends and receives every message in one buffer of -s
  // bytes. With --chk each QP sends from a buffer of its own and each
  // posted receive gets a slot of its own (its index in the wr_id), so a
  // batch of completions can be checked after the fact.
  static std::unique_ptr<SrqContext> create(Device& dev, const Options& o, std::string& error);
  ~SrqContext();

  // Posts up to n receives to the SRQ; returns how many were posted.
  int post_recv(int n);
  // A SEND on QP `qp_index`; 0 or an errno.
  int post_send(int qp_index);
  // pp_connect_ctx: QP i to RTR towards remote[i], then RTS with my[i].psn.
  bool connect(const std::vector<exchange::PingpongDest>& my, const std::vector<exchange::PingpongDest>& remote,
               std::string& error);
  // The index of the QP with this number, -1 if none (find_qp).
  int find_qp(uint32_t qpn) const;

  // wr_id of a receive: kRecvWrid in its low bits, its slot above.
  static uint64_t recv_slot(uint64_t wr_id) { return wr_id >> 2; }
  static uint64_t wr_kind(uint64_t wr_id) { return wr_id & 3; }

  CompletionQueue& cq() { return *cq_; }
  CompletionChannel* channel() { return channel_.get(); }
  QueuePair& qp(int i) { return *qps_[size_t(i)]; }
  int num_qp() const { return int(qps_.size()); }
  uint32_t size() const { return size_; }
  uint8_t* tx(int qp_index) const { return chk_ ? tx_ + size_t(qp_index) * size_ : tx_; }
  const uint8_t* rx(uint64_t slot) const { return chk_ ? rx_ + slot * size_ : rx_; }

 private:
  SrqContext() = default;
  const Options* o_ = nullptr;
  bool chk_ = false;
  uint32_t size_ = 0;
  uint32_t slots_ = 1;
  uint64_t next_slot_ = 0;
  unsigned send_flags_ = IBV_SEND_SIGNALED;
  uint8_t* tx_ = nullptr;
  uint8_t* rx_ = nullptr;
  std::unique_ptr<ProtectionDomain> pd_;
  std::unique_ptr<MemoryRegion> mr_;
  std::unique_ptr<CompletionChannel> channel_;  // -e
  std::unique_ptr<CompletionQueue> cq_;
  std::unique_ptr<SharedReceiveQueue> srq_;
  std::vector<std::unique_ptr<QueuePair>> qps_;
};

}  // namespace uroce::pingpong
