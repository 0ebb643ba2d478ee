// rc_pingpong's pingpong_context: PD, a registered buffer, one CQ and one
// RC QP in INIT, and the verbs calls the ping-pong makes on them
// (pp_post_recv, pp_post_send, pp_connect_ctx).
#pragma once

#include <memory>
#include <string>

#include "options.h"
#include "uroce/exchange/pingpong.h"
#include "uroce/verbs/verbs.h"

namespace uroce::pingpong {

enum WrId : uint64_t { kRecvWrid = 1, kSendWrid = 2 };  // rc_pingpong's PINGPONG_*_WRID

class Context {
 public:
  // The client sends from the first `size` bytes and receives into the
  // second, so with --chk an echo cannot be mistaken for its own bytes.
  // The server sends and receives in one buffer, as rc_pingpong does: what
  // it sends back is what it received. nullptr and a message on failure.
  static std::unique_ptr<Context> create(Device& dev, const Options& o, bool client, std::string& error);
  ~Context();

  // Posts up to n receives; returns how many were posted.
  int post_recv(int n);
  // 0 or an errno.
  int post_send();
  // INIT -> RTR -> RTS towards `remote`, as pp_connect_ctx.
  bool connect(const exchange::PingpongDest& remote, uint32_t my_psn, std::string& error);

  CompletionQueue& cq() { return *cq_; }
  QueuePair& qp() { return *qp_; }
  uint8_t* tx() const { return tx_; }
  uint8_t* rx() const { return rx_; }
  uint32_t size() const { return size_; }

 private:
  Context() = default;
  const Options* o_ = nullptr;
  uint32_t size_ = 0;
  unsigned send_flags_ = IBV_SEND_SIGNALED;
  uint8_t* tx_ = nullptr;
  uint8_t* rx_ = nullptr;
  std::unique_ptr<ProtectionDomain> pd_;
  std::unique_ptr<MemoryRegion> mr_;
  std::unique_ptr<CompletionQueue> cq_;
  std::unique_ptr<QueuePair> qp_;
};

}  // namespace uroce::pingpong
