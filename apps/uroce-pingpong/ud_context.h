// SPDX-License-Identifier: BSD-3-Clause
// ud_pingpong's pingpong_context: one UD QP (qkey 0x11111111) whose
// receives have room for the 40-byte GRH in front of the payload, and the
// address handle of the peer, built from the GID it sent.
#pragma once

#include <memory>
#include <string>

#include "endpoint.h"
#include "options.h"
#include "uroce/exchange/pingpong.h"
#include "uroce/verbs/verbs.h"

namespace uroce::pingpong {

inline constexpr uint32_t kUdQkey = 0x11111111;  // ud_pingpong's, both ways
inline constexpr uint32_t kGrhBytes = 40;        // what a UD receive holds before the payload

class UdContext : public Endpoint {
 public:
  // One buffer of GRH + size, as ud_pingpong: receives land at its start,
  // sends go from its byte 40, so the server echoes what it received. The
  // client sends from a second such buffer, so --chk cannot mistake its own
  // message for the echo. nullptr and a message on failure.
  static std::unique_ptr<UdContext> create(Device& dev, const Options& o, bool client, std::string& error);
  ~UdContext() override;

  int post_recv(int n) override;
  int post_send() override;
  CompletionQueue& cq() override { return *cq_; }
  CompletionChannel* channel() override { return channel_.get(); }
  uint8_t* tx() override { return tx_; }
  const uint8_t* rx_payload() override { return rx_ + kGrhBytes; }
  uint32_t recv_byte_len() const override { return size_ + kGrhBytes; }
  // The GRH names the peer's GID as its source, and the sender's QP is the
  // one it announced.
  bool check_recv(const ibv_wc& wc, std::string& why) override;

  // RTR, RTS with our PSN, then the address handle towards `remote`
  // (pp_connect_ctx); the peer's MAC must be resolved by now.
  bool connect(const exchange::PingpongDest& remote, uint32_t my_psn, std::string& error);
  QueuePair& qp() { return *qp_; }

 private:
  UdContext() = default;
  const Options* o_ = nullptr;
  unsigned send_flags_ = IBV_SEND_SIGNALED;
  uint8_t* tx_ = nullptr;
  uint8_t* rx_ = nullptr;
  exchange::PingpongDest remote_;
  std::unique_ptr<ProtectionDomain> pd_;
  std::unique_ptr<MemoryRegion> mr_;
  std::unique_ptr<CompletionChannel> channel_;  // -e
  std::unique_ptr<CompletionQueue> cq_;
  std::unique_ptr<QueuePair> qp_;
  std::unique_ptr<AddressHandle> ah_;
};

}  // namespace uroce::pingpong
