// Latency: one message in flight. SEND and WRITE ping-pong between the two
// sides and report half the round trip (perftest's convention); READ
// reports the whole READ.
#include <chrono>
#include <cstring>

#include "runner.h"

namespace uroce::perf {
namespace {

using Clock = std::chrono::steady_clock;

// Messages go from the first `size` bytes of one buffer into the second
// `size` bytes of the other, so a side never mistakes its own bytes for the
// peer's.
int post_one(Endpoint& e, ibv_wr_opcode op, uint64_t size, const PeerInfo& peer, const Options& o,
             uint64_t local_off = 0) {
  ibv_sge sge{e.addr(0) + local_off, uint32_t(size), e.lkey()};
  SendWr w;
  w.opcode = op;
  w.sg_list = &sge;
  w.num_sge = 1;
  w.send_flags = IBV_SEND_SIGNALED;
  if (size <= o.inline_size && op != IBV_WR_RDMA_READ) w.send_flags |= IBV_SEND_INLINE;
  w.wr.rdma.remote_addr = peer.vaddr + (op == IBV_WR_RDMA_READ ? 0 : size);
  w.wr.rdma.rkey = peer.rkey;
  const SendWr* bad = nullptr;
  return e.qp(0).post_send(&w, &bad);
}

int post_recv(Endpoint& e, uint64_t size) {
  ibv_sge sge{e.addr(0) + size, uint32_t(e.buf_bytes() - size), e.lkey()};
  RecvWr wr;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  const RecvWr* bad = nullptr;
  return e.qp(0).post_recv(&wr, &bad);
}

// Completions seen but not yet waited for, by opcode: a send completion
// may arrive while we wait for a receive.
struct Tally {
  uint32_t count[256] = {};
};

// Waits for one completion of `want` opcode on e's CQ; false on a WC error.
bool wait_wc(Endpoint& e, Tally& t, const PollFn& poll, ibv_wc_opcode want, std::string& error) {
  while (t.count[want & 0xFF] == 0) {
    ibv_wc wc;
    while (e.cq().poll(1, &wc) == 1) {
      if (wc.status != IBV_WC_SUCCESS) {
        error = "completion with error, status " + std::to_string(wc.status);
        return false;
      }
      ++t.count[wc.opcode & 0xFF];
    }
    if (t.count[want & 0xFF] == 0) poll();
  }
  --t.count[want & 0xFF];
  return true;
}

// The last byte of a WRITE carries the iteration's marker; the other side
// spins on it, as perftest's write_lat does.
bool wait_byte(Endpoint& e, uint64_t size, uint8_t marker, const PollFn& poll) {
  volatile uint8_t* last = e.buf(0) + 2 * size - 1;
  while (*last != marker) poll();
  return true;
}

}  // namespace

LatResult run_lat(Endpoint& c, Endpoint& s, const PollFn& poll, const Options& o, uint64_t size) {
  LatResult r;
  r.size = size;
  r.usec.reserve(o.iters);
  const PeerInfo to_s = s.info(0), to_c = c.info(0);
  if (o.verb == Verb::send) {
    post_recv(c, size);
    post_recv(s, size);
  }
  std::memset(c.buf(0), 0, 2 * size);
  fill_pattern(c.buf(0), size, 0x33);
  std::memset(s.buf(0), 0, 2 * size);
  if (o.verb == Verb::read) fill_pattern(s.buf(0), size, 0x77);  // READ fetches this
  Tally tc, ts;
  for (uint64_t i = 0; i < o.iters && r.error.empty(); ++i) {
    const uint8_t marker = uint8_t(i % 255 + 1);
    c.buf(0)[size - 1] = marker;  // the message ends with the iteration's marker
    const auto t0 = Clock::now();
    switch (o.verb) {
      case Verb::write:
        post_one(c, IBV_WR_RDMA_WRITE, size, to_s, o);
        wait_byte(s, size, marker, poll);
        post_one(s, IBV_WR_RDMA_WRITE, size, to_c, o, size);  // echo what arrived
        wait_byte(c, size, marker, poll);  // the server echoes its buffer, marker included
        wait_wc(c, tc, poll, IBV_WC_RDMA_WRITE, r.error) && wait_wc(s, ts, poll, IBV_WC_RDMA_WRITE, r.error);
        break;
      case Verb::send:
        post_one(c, IBV_WR_SEND, size, to_s, o);
        if (!wait_wc(s, ts, poll, IBV_WC_RECV, r.error)) break;
        post_recv(s, size);
        post_one(s, IBV_WR_SEND, size, to_c, o, size);
        if (!wait_wc(c, tc, poll, IBV_WC_RECV, r.error)) break;
        post_recv(c, size);
        wait_wc(c, tc, poll, IBV_WC_SEND, r.error) && wait_wc(s, ts, poll, IBV_WC_SEND, r.error);
        break;
      default:
        post_one(c, IBV_WR_RDMA_READ, size, to_s, o, size);
        wait_wc(c, tc, poll, IBV_WC_RDMA_READ, r.error);
        break;
    }
    const double us = std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
    r.usec.push_back(o.verb == Verb::read ? us : us / 2);
  }
  if (o.verify && r.error.empty()) {
    if (o.verb == Verb::read) check_pattern(c.buf(0) + size, size, 0x77, r.error);
    else if (std::memcmp(c.buf(0), c.buf(0) + size, size) != 0) r.error = "echoed data does not match what was sent";
  }
  return r;
}

}  // namespace uroce::perf
