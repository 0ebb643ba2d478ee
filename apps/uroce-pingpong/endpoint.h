// SPDX-License-Identifier: BSD-3-Clause
// What the one-QP ping-pong loop (run.h) needs of its QP, whether it is
// rc_pingpong's RC QP or ud_pingpong's UD QP: post receives, post the
// next SEND, poll the CQ, and where the bytes of a message are.
#pragma once

#include <cstdint>
#include <string>

#include "uroce/verbs/verbs.h"

namespace uroce::pingpong {

enum WrId : uint64_t { kRecvWrid = 1, kSendWrid = 2 };  // the examples' PINGPONG_*_WRID

class Endpoint {
 public:
  virtual ~Endpoint() = default;
  // Posts up to n receives; returns how many were posted.
  virtual int post_recv(int n) = 0;
  // 0 or an errno.
  virtual int post_send() = 0;
  virtual CompletionQueue& cq() = 0;
  // -e: the CQ's completion channel (nullptr without -e).
  virtual CompletionChannel* channel() = 0;
  // The message to send (--chk fills it).
  virtual uint8_t* tx() = 0;
  // The payload of the last receive and the byte_len a good one reports.
  virtual const uint8_t* rx_payload() = 0;
  virtual uint32_t recv_byte_len() const = 0;
  // --chk: what the completion of a good receive must say beyond its
  // length; true or a message.
  virtual bool check_recv(const ibv_wc&, std::string&) { return true; }
  uint32_t size() const { return size_; }

 protected:
  uint32_t size_ = 0;
};

}  // namespace uroce::pingpong
