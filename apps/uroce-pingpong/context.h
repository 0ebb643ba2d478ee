// SPDX-License-Identifier: BSD-3-Clause
// rc_pingpong's pingpong_context: PD, a registered buffer, one CQ and one
// RC QP in INIT, and the verbs calls the ping-pong makes on them
// (pp_post_recv, pp_post_send, pp_connect_ctx).
#pragma once

#include <memory>
#include <string>

#include "endpoint.h"
#include "options.h"
#include "uroce/exchange/pingpong.h"
#include "uroce/verbs/verbs.h"

namespace uroce::pingpong {

class Context : public Endpoint {
 public:
  // The client sends from the first `size` bytes and receives into the
  // second, so with --chk an echo cannot be mistaken for its own bytes.
  // The server sends and receives in one buffer, as rc_pingpong does: what
  // it sends back is what it received. nullptr and a message on failure.
  static std::unique_ptr<Context> create(Device& dev, const Options& o, bool client, std::string& error);
  ~Context() override;

  int post_recv(int n) override;
  int post_send() override;
  // INIT -> RTR -> RTS towards `remote`, as pp_connect_ctx.
  bool connect(const exchange::PingpongDest& remote, uint32_t my_psn, std::string& error);

  CompletionQueue& cq() override { return *cq_; }
  CompletionChannel* channel() override { return channel_.get(); }
  uint8_t* tx() override { return tx_; }
  const uint8_t* rx_payload() override { return rx_; }
  uint32_t recv_byte_len() const override { return size_; }
  QueuePair& qp() { return *qp_; }

 private:
  Context() = default;
  const Options* o_ = nullptr;
  unsigned send_flags_ = IBV_SEND_SIGNALED;
  uint8_t* tx_ = nullptr;
  uint8_t* rx_ = nullptr;
  std::unique_ptr<ProtectionDomain> pd_;
  std::unique_ptr<MemoryRegion> mr_;
  std::unique_ptr<CompletionChannel> channel_;  // -e
  std::unique_ptr<CompletionQueue> cq_;
  std::unique_ptr<QueuePair> qp_;
};

}  // namespace uroce::pingpong
