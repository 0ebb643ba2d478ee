// SPDX-License-Identifier: BSD-3-Clause
#include "run.h"

#include <sys/time.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <optional>

#include "app_support.h"
#include "loop_support.h"
#include "pattern.h"

namespace uroce::pingpong {
namespace {

const char* wr_name(uint64_t wr_id) { return wr_id == kSendWrid ? "send" : wr_id == kRecvWrid ? "recv" : "?"; }

}  // namespace

RunResult run_pingpong(Endpoint& c, const PollFn& poll, const Options& o, bool client, int routs) {
  RunResult r;
  const auto stall_limit = std::chrono::milliseconds(o.timeout_ms);
  uint64_t pending = kRecvWrid;
  if (client) {
    if (o.chk) fill_pattern(c.tx(), c.size(), 0);
    if (int err = c.post_send()) return r.error = "couldn't post send: " + std::string(std::strerror(err)), r;
    pending |= kSendWrid;
  }
  timeval start{}, end{};
  gettimeofday(&start, nullptr);
  Progress progress(o.iters);
  auto last_completion = Clock::now();
  uint32_t rcnt = 0, scnt = 0, idle = 0;
  std::optional<EventWait> events;
  if (c.channel()) events.emplace(*c.channel(), c.cq());
  while (rcnt < o.iters || scnt < o.iters) {
    ibv_wc wc[2];
    const int ne = c.cq().poll(2, wc);
    if (ne == 0 && events) {
      if (!events->idle(stall_limit, r.error)) return r;
      continue;
    }
    if (ne == 0) {
      poll();
      if (++idle % 1024 == 0 && Clock::now() - last_completion > stall_limit) {
        char buf[200];
        std::snprintf(buf, sizeof buf,
                      "no completion for %.1f s (%u of %u messages sent, %u received): the peer stopped answering",
                      o.timeout_ms / 1000.0, scnt, o.iters, rcnt);
        r.error = buf;
        return r;
      }
      continue;
    }
    idle = 0;
    last_completion = Clock::now();
    progress.update(last_completion, rcnt);
    for (int i = 0; i < ne; ++i) {
      const ibv_wc& w = wc[i];
      if (w.status != IBV_WC_SUCCESS) {
        char buf[160];
        std::snprintf(buf, sizeof buf, "Failed status %s for wr_id %d (%s) after %u sends, %u receives",
                      app::wc_status_text(w.status).c_str(), int(w.wr_id), wr_name(w.wr_id), scnt, rcnt);
        r.error = buf;
        return r;
      }
      switch (w.wr_id) {
        case kSendWrid:
          ++scnt;
          break;
        case kRecvWrid:
          if (--routs <= 1) {
            routs += c.post_recv(int(o.rx_depth) - routs);
            if (routs < int(o.rx_depth)) return r.error = "couldn't post receive (" + std::to_string(routs) + ")", r;
          }
          if (o.chk) {
            std::string why;
            if (w.byte_len != c.recv_byte_len())
              why = "message " + std::to_string(rcnt) + ": " + std::to_string(w.byte_len) + " bytes, expected " +
                    std::to_string(c.recv_byte_len());
            else if (c.check_recv(w, why))
              check_pattern(c.rx_payload(), c.size(), rcnt, why);
            else
              why = "message " + std::to_string(rcnt) + ": " + why;
            if (!why.empty() && r.mismatches++ == 0) r.first_mismatch = why;
          }
          ++rcnt;
          break;
        default:
          return r.error = "completion for unknown wr_id " + std::to_string(w.wr_id), r;
      }
      pending &= ~w.wr_id;
      if (scnt < o.iters && !pending) {
        // The client stamps each message; the server echoes what it got.
        if (client && o.chk) fill_pattern(c.tx(), c.size(), scnt);
        if (int err = c.post_send()) return r.error = "couldn't post send: " + std::string(std::strerror(err)), r;
        pending = kRecvWrid | kSendWrid;
      }
    }
  }
  gettimeofday(&end, nullptr);
  r.usec = float((end.tv_sec - start.tv_sec) * 1000000 + (end.tv_usec - start.tv_usec));
  drain(poll);
  return r;
}

}  // namespace uroce::pingpong
