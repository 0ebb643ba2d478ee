// SPDX-License-Identifier: BSD-3-Clause
// What a tool's out-of-band conversation runs over: steps of a known size,
// in order, each side waiting for the other's. perftest speaks it over a
// TCP socket (TcpChannel) or, with -R, over SENDs on an RC QP that rdma_cm
// connected (one SEND per step; uroce-perf's CmChannel).
#pragma once

#include <chrono>
#include <cstddef>
#include <string>

namespace uroce::exchange {

using Millis = std::chrono::milliseconds;

class Channel {
 public:
  virtual ~Channel() = default;

  // Exactly n bytes, within the channel's timeout; false and a message
  // (peer closed, timed out after N ms waiting for K bytes, ...) otherwise.
  virtual bool send(const void* data, size_t n, std::string& error) = 0;
  virtual bool recv(void* data, size_t n, std::string& error) = 0;
  // As recv, but a peer that ends the conversation cleanly before sending
  // anything is not an error: true with `eof` set. For optional trailers
  // such as perftest's "done" (some versions do not send it).
  virtual bool recv_or_eof(void* data, size_t n, bool& eof, std::string& error) = 0;
  // The last step: says "nothing more from me" and waits until the peer
  // does the same or `timeout` passes. False on timeout.
  virtual bool linger(Millis timeout) = 0;
  // Without waiting: the peer has ended the conversation, or it failed.
  virtual bool peer_closed() const = 0;
  // Without waiting: the peer has sent something not yet read (or ended).
  virtual bool peer_spoke() const = 0;

  // 0: no deadline.
  virtual void set_timeout(Millis timeout) = 0;
  virtual Millis timeout() const = 0;
  // The peer's address for messages ("10.0.0.2:18515").
  virtual const std::string& peer() const = 0;
};

}  // namespace uroce::exchange
