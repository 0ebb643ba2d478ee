#include "run.h"

#include <sys/time.h>

#include <chrono>
#include <cstdio>
#include <cstring>

#include "pattern.h"
#include "wc_status.h"

namespace uroce::pingpong {
namespace {

using Clock = std::chrono::steady_clock;

// A line on stderr every 2 s once a run has lasted 3 s, so a long run
// shows it is alive without cluttering short ones.
class Progress {
 public:
  explicit Progress(uint32_t iters) : iters_(iters), start_(Clock::now()), next_(start_ + std::chrono::seconds(3)) {}
  void update(Clock::time_point now, uint32_t done) {
    if (now < next_) return;
    next_ = now + std::chrono::seconds(2);
    std::fprintf(stderr, "uroce-pingpong: %u/%u iterations, %.1f s\n", done, iters_,
                 std::chrono::duration<double>(now - start_).count());
  }

 private:
  uint32_t iters_;
  Clock::time_point start_, next_;
};

const char* wr_name(uint64_t wr_id) { return wr_id == kSendWrid ? "send" : wr_id == kRecvWrid ? "recv" : "?"; }

// Runs the engine until it has nothing left to do (at most ~50 ms): our
// last ACK may still be queued when the last completion arrives, and the
// peer's last SEND completes only when that ACK reaches it.
void drain(const PollFn& poll) {
  const auto deadline = Clock::now() + std::chrono::milliseconds(50);
  for (int quiet = 0; quiet < 64 && Clock::now() < deadline;) quiet = poll() ? 0 : quiet + 1;
}

}  // namespace

RunResult run_pingpong(Context& c, const PollFn& poll, const Options& o, bool client, int routs) {
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
  while (rcnt < o.iters || scnt < o.iters) {
    ibv_wc wc[2];
    const int ne = c.cq().poll(2, wc);
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
        std::snprintf(buf, sizeof buf, "Failed status %s (%d) for wr_id %d (%s) after %u sends, %u receives",
                      wc_status_str(w.status), int(w.status), int(w.wr_id), wr_name(w.wr_id), scnt, rcnt);
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
            if (w.byte_len != c.size())
              why = "message " + std::to_string(rcnt) + ": " + std::to_string(w.byte_len) + " bytes, expected " +
                    std::to_string(c.size());
            else
              check_pattern(c.rx(), c.size(), rcnt, why);
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
