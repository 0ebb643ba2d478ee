// SPDX-License-Identifier: BSD-3-Clause
#include "srq_run.h"

#include <sys/time.h>

#include <cstdio>
#include <cstring>
#include <optional>
#include <vector>

#include "app_support.h"
#include "pattern.h"

namespace uroce::pingpong {
namespace {

std::string post_error(int qp, int err) {
  return "couldn't post send on QP[" + std::to_string(qp) + "]: " + std::strerror(err);
}

}  // namespace

RunResult run_srq_pingpong(SrqContext& c, const PollFn& poll, const Options& o, bool client, int routs) {
  RunResult r;
  const int num_qp = c.num_qp();
  const auto stall_limit = std::chrono::milliseconds(o.timeout_ms);
  std::vector<uint64_t> pending(size_t(num_qp), kRecvWrid);
  // --chk: messages sent and received per QP.
  std::vector<uint32_t> sent(static_cast<size_t>(num_qp)), rcvd(static_cast<size_t>(num_qp));
  if (client) {
    for (int i = 0; i < num_qp; ++i) {
      if (o.chk) fill_pattern(c.tx(i), c.size(), srq_seed(i, sent[size_t(i)]++));
      if (int err = c.post_send(i)) return r.error = post_error(i, err), r;
      pending[size_t(i)] = kSendWrid | kRecvWrid;
    }
  }
  std::vector<ibv_wc> wc(o.rx_depth + size_t(num_qp));
  timeval start{}, end{};
  gettimeofday(&start, nullptr);
  Progress progress(o.iters);
  auto last_completion = Clock::now();
  uint32_t rcnt = 0, scnt = 0, idle = 0, sends_out = client ? uint32_t(num_qp) : 0;
  std::optional<EventWait> events;
  if (c.channel()) events.emplace(*c.channel(), c.cq());
  while (rcnt < o.iters || scnt < o.iters) {
    const int ne = c.cq().poll(int(wc.size()), wc.data());
    if (ne == 0 && events) {
      if (!events->idle(stall_limit, r.error)) return r;
      continue;
    }
    if (ne == 0) {
      poll();
      if (++idle % 1024 == 0 && Clock::now() - last_completion > stall_limit) {
        char buf[200];
        std::snprintf(buf, sizeof buf,
                      "no completion for %.1f s (%u of %u messages sent, %u received over %d QPs): the peer stopped "
                      "answering",
                      o.timeout_ms / 1000.0, scnt, o.iters, rcnt, num_qp);
        return r.error = buf, r;
      }
      continue;
    }
    idle = 0;
    last_completion = Clock::now();
    progress.update(last_completion, rcnt);
    for (int k = 0; k < ne; ++k) {
      const ibv_wc& w = wc[size_t(k)];
      const uint64_t kind = SrqContext::wr_kind(w.wr_id);
      if (w.status != IBV_WC_SUCCESS) {
        char buf[200];
        std::snprintf(buf, sizeof buf, "Failed status %s for wr_id %d (%s on QPN 0x%06x) after %u sends, %u receives",
                      app::wc_status_text(w.status).c_str(), int(kind), kind == kSendWrid ? "send" : "recv",
                      w.qp_num, scnt, rcnt);
        return r.error = buf, r;
      }
      const int qi = c.find_qp(w.qp_num);
      if (qi < 0) {
        char buf[64];
        std::snprintf(buf, sizeof buf, "Couldn't find QPN %06x", w.qp_num);
        return r.error = buf, r;
      }
      switch (kind) {
        case kSendWrid:
          ++scnt;
          --sends_out;
          break;
        case kRecvWrid:
          if (--routs <= num_qp) {
            routs += c.post_recv(int(o.rx_depth) - routs);
            if (routs < int(o.rx_depth)) return r.error = "couldn't post receive (" + std::to_string(routs) + ")", r;
          }
          if (o.chk) {
            const uint32_t n = rcvd[size_t(qi)]++;
            const uint8_t* got = c.rx(SrqContext::recv_slot(w.wr_id));
            std::string why;
            if (w.byte_len != c.size())
              why = std::to_string(w.byte_len) + " bytes, expected " + std::to_string(c.size());
            else
              check_pattern(got, c.size(), srq_seed(qi, n), why);
            if (!why.empty() && r.mismatches++ == 0) r.first_mismatch = "QP[" + std::to_string(qi) + "] " + why;
            // The server echoes each QP's messages from that QP's buffer.
            if (!client) std::memcpy(c.tx(qi), got, c.size());
          }
          ++rcnt;
          break;
        default:
          return r.error = "Completion for unknown wr_id " + std::to_string(w.wr_id), r;
      }
      pending[size_t(qi)] &= ~kind;
      if (scnt < o.iters && !pending[size_t(qi)]) {
        if (client && o.chk) fill_pattern(c.tx(qi), c.size(), srq_seed(qi, sent[size_t(qi)]));
        ++sent[size_t(qi)];
        if (int err = c.post_send(qi)) return r.error = post_error(qi, err), r;
        ++sends_out;
        pending[size_t(qi)] = kRecvWrid | kSendWrid;
      }
    }
  }
  gettimeofday(&end, nullptr);
  r.usec = float((end.tv_sec - start.tv_sec) * 1000000 + (end.tv_usec - start.tv_usec));
  // SENDs posted on other QPs as -n was reached are still in flight: the
  // peer may need them to reach its own -n, so let them complete.
  const auto until = Clock::now() + stall_limit;
  while (sends_out > 0 && Clock::now() < until) {
    const int ne = c.cq().poll(int(wc.size()), wc.data());
    for (int k = 0; k < ne; ++k)
      if (SrqContext::wr_kind(wc[size_t(k)].wr_id) == kSendWrid) --sends_out;
    if (ne == 0) poll();
  }
  drain(poll);
  return r;
}

}  // namespace uroce::pingpong
