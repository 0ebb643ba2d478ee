// SPDX-License-Identifier: BSD-3-Clause
// --daemon SOCKET: both ends of the test in this process, as two clients
// of one uroced (its engine's loopback joins their QPs). The data path is
// the daemon's: rings in shared memory, regions from the daemon.
#include "daemon_run.h"

#include <cstdio>
#include <cstring>
#include <string>

#include "perftest_glue.h"
#include "report.h"
#include "runner.h"
#include "cycle_clock.h"
#include "uroce/client/daemon_client.h"

namespace uroce::perf {
namespace {

using client::Connection;

struct Side {
  std::unique_ptr<Connection> conn;
  std::unique_ptr<client::ProtectionDomain> pd;
  std::unique_ptr<client::CompletionQueue> cq;
  std::unique_ptr<client::QueuePair> qp;
  std::unique_ptr<client::MemoryRegion> mr;
  uint8_t* buf = nullptr;
  uint64_t half = 0;  // the first half is sent from, the second written into
  uint64_t outstanding_recvs = 0;

  bool open(const Options& o, uint64_t bytes, std::string& error) {
    conn = Connection::connect(o.daemon, error);
    if (!conn) return false;
    int err = 0;
    if (!(pd = conn->alloc_pd(err)) || !(cq = conn->create_cq(int(o.tx_depth + o.rx_depth), err)))
      return error = std::string("PD/CQ: ") + std::strerror(err), false;
    client::QpInitAttr a;
    a.send_cq = a.recv_cq = cq.get();
    a.cap.max_send_wr = o.tx_depth;
    a.cap.max_recv_wr = o.rx_depth;
    a.cap.max_send_sge = a.cap.max_recv_sge = 1;
    a.cap.max_inline_data = o.inline_size;
    if (!(qp = pd->create_qp(a, err))) return error = std::string("create_qp: ") + std::strerror(err), false;
    const int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
    if (!(mr = pd->alloc_mr(2 * bytes, access, err))) return error = std::string("alloc_mr: ") + std::strerror(err), false;
    buf = static_cast<uint8_t*>(mr->addr());
    half = bytes;
    return true;
  }

  PeerInfo info(uint32_t psn) const {
    PeerInfo p;
    p.qpn = qp->qp_num();
    p.psn = psn;
    p.rkey = mr->rkey();
    p.vaddr = reinterpret_cast<uintptr_t>(buf) + half;
    p.gid = wire::IpAddr::from_v6(conn->gid());
    return p;
  }

  int connect(const PeerInfo& peer, uint32_t my_psn, const Options& o, ibv_mtu mtu) {
    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_INIT;
    a.port_num = 1;
    a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
    if (int e = qp->modify(a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS)) return e;
    a = {};
    a.qp_state = IBV_QPS_RTR;
    a.path_mtu = mtu;
    a.dest_qp_num = peer.qpn;
    a.rq_psn = peer.psn;
    a.max_dest_rd_atomic = 16;
    a.min_rnr_timer = 12;
    a.ah_attr.is_global = 1;
    a.ah_attr.port_num = 1;
    a.ah_attr.grh.sgid_index = 1;
    a.ah_attr.grh.hop_limit = o.hop_limit;
    std::memcpy(a.ah_attr.grh.dgid.raw, peer.gid.bytes.data(), 16);
    if (int e = qp->modify(a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                                  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
      return e;
    a = {};
    a.qp_state = IBV_QPS_RTS;
    a.sq_psn = my_psn;
    a.timeout = o.qp_timeout;
    a.retry_cnt = 7;
    a.rnr_retry = 7;
    a.max_rd_atomic = 16;
    return qp->modify(a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                             IBV_QP_MAX_QP_RD_ATOMIC);
  }

  // A WRITE or SEND of `size` bytes from the first half into the peer's
  // second half.
  int post(const Options& o, const PeerInfo& peer, uint64_t size, uint64_t wr_id, bool signaled) {
    ibv_sge sge{reinterpret_cast<uintptr_t>(buf), uint32_t(size), mr->lkey()};
    SendWr wr;
    wr.wr_id = wr_id;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = o.verb == Verb::write ? IBV_WR_RDMA_WRITE : IBV_WR_SEND;
    wr.send_flags = (signaled ? IBV_SEND_SIGNALED : 0) | (size <= o.inline_size ? IBV_SEND_INLINE : 0);
    wr.wr.rdma = {peer.vaddr, peer.rkey};
    const SendWr* bad = nullptr;
    return qp->post_send(&wr, &bad);
  }

  int post_recv(uint64_t size) {
    ibv_sge sge{reinterpret_cast<uintptr_t>(buf) + half, uint32_t(size), mr->lkey()};
    RecvWr wr;
    wr.wr_id = 1u << 31;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    const RecvWr* bad = nullptr;
    const int err = qp->post_recv(&wr, &bad);
    if (err == 0) ++outstanding_recvs;
    return err;
  }
};

std::string wc_error(const ibv_wc& wc) {
  return std::string("completion with error: ") + ibv_wc_status_str(wc.status);
}

// Keeps the peer's receive queue filled, takes its completions.
bool refill(Side& rx, uint64_t size, uint64_t want, uint64_t& received, const Options& o, std::string& error) {
  ibv_wc wc[16];
  const int n = rx.cq->poll(16, wc);
  for (int i = 0; i < n; ++i) {
    if (wc[i].status != IBV_WC_SUCCESS) return error = wc_error(wc[i]), false;
    if (wc[i].opcode & IBV_WC_RECV) ++received, --rx.outstanding_recvs;
  }
  while (rx.outstanding_recvs < o.rx_depth && received + rx.outstanding_recvs < want)
    if (rx.post_recv(size) != 0) break;
  return true;
}

BwResult run_bw(Side& tx, Side& rx, const PeerInfo& peer, const Options& o, uint64_t size) {
  BwResult r;
  r.size = size;
  fill_pattern(tx.buf, size, uint32_t(size));
  const bool send = o.verb == Verb::send;
  uint64_t received = 0, posted = 0, completed = 0;
  if (send && !refill(rx, size, o.iters, received, o, r.error)) return r;
  const uint32_t cq_mod = std::max<uint32_t>(1, std::min(o.cq_mod, o.tx_depth));
  const auto t0 = CycleClock::now();
  ibv_wc wc[16];
  while (completed < o.iters || (send && received < o.iters)) {
    while (posted < o.iters && posted - completed < o.tx_depth) {
      const bool signaled = (posted + 1) % cq_mod == 0 || posted + 1 == o.iters;
      const int err = tx.post(o, peer, size, posted, signaled);
      if (err == ENOMEM) break;
      if (err != 0) return r.error = std::string("post_send: ") + std::strerror(err), r;
      ++posted;
    }
    const int n = tx.cq->poll(16, wc);
    for (int i = 0; i < n; ++i) {
      if (wc[i].status != IBV_WC_SUCCESS) return r.error = wc_error(wc[i]), r;
      completed = wc[i].wr_id + 1;  // a signaled WR completes the ones before it
    }
    if (send && !refill(rx, size, o.iters, received, o, r.error)) return r;
  }
  r.seconds = std::chrono::duration<double>(CycleClock::now() - t0).count();
  r.iters = o.iters;
  r.per_qp = {o.iters};
  r.avg_bps = double(r.iters) * double(size) / r.seconds;
  r.msg_rate = double(r.iters) / r.seconds;
  r.peak_bps = r.avg_bps;
  if (o.verify) check_pattern(rx.buf + rx.half, size, uint32_t(size), r.error);
  return r;
}

// Waits for the byte at p to become v (a WRITE landing), or for a receive.
bool arrived(Side& s, const Options& o, volatile uint8_t* p, uint8_t v, uint64_t size, std::string& error) {
  for (uint64_t spins = 0;; ++spins) {
    if (o.verb == Verb::write) {
      if (*p == v) return true;
    } else {
      ibv_wc wc;
      while (s.cq->poll(1, &wc) == 1) {
        if (wc.status != IBV_WC_SUCCESS) return error = wc_error(wc), false;
        if (wc.opcode & IBV_WC_RECV) return --s.outstanding_recvs, s.post_recv(size) == 0;
      }
    }
    if ((spins & 0xFFFFF) == 0 && s.conn->dead()) return error = "uroced is gone", false;
  }
}

// Unsignaled posts free their ring slot without a completion; a signaled
// one now and then, drained here, keeps the daemon's queue from filling.
bool drain_sends(Side& s, std::string& error) {
  ibv_wc wc[8];
  for (int n; (n = s.cq->poll(8, wc)) > 0;)
    for (int i = 0; i < n; ++i)
      if (wc[i].status != IBV_WC_SUCCESS) return error = wc_error(wc[i]), false;
  return true;
}

LatResult run_lat(Side& a, Side& b, const PeerInfo& to_b, const PeerInfo& to_a, const Options& o, uint64_t size) {
  LatResult r;
  r.size = size;
  const bool send = o.verb == Verb::send;
  if (send) {
    for (uint32_t i = 0; i < std::min<uint32_t>(o.rx_depth, 16); ++i)
      if (a.post_recv(size) || b.post_recv(size)) return r.error = "post_recv", r;
  }
  std::memset(a.buf, 0, 2 * a.half);
  std::memset(b.buf, 0, 2 * b.half);
  const uint32_t cq_mod = std::max<uint32_t>(1, std::min(o.cq_mod, o.tx_depth / 2));
  r.posted.reserve(o.iters);
  for (uint64_t i = 0; i < o.iters; ++i) {
    const uint8_t mark = uint8_t(i % 255 + 1);
    const bool signaled = i % cq_mod == cq_mod - 1;
    a.buf[size - 1] = mark;
    r.posted.push_back(CycleClock::cycles());
    if (a.post(o, to_b, size, i, signaled) != 0) return r.error = "post_send", r;
    if (!arrived(b, o, b.buf + b.half + size - 1, mark, size, r.error)) return r;
    b.buf[size - 1] = mark;
    if (b.post(o, to_a, size, i, signaled) != 0) return r.error = "post_send", r;
    if (!arrived(a, o, a.buf + a.half + size - 1, mark, size, r.error)) return r;
    if (signaled && send) continue;  // SEND: arrived() took the send completions on the way
    if (signaled && (!drain_sends(a, r.error) || !drain_sends(b, r.error))) return r;
  }
  r.iters = o.iters;
  return r;
}

int fail(const std::string& message) {
  std::fprintf(stderr, "uroce-perf: %s\n", message.c_str());
  std::fflush(nullptr);
  return 1;
}

}  // namespace

int run_daemon(const Options& o) {
  std::string error;
  uint64_t largest = 0;
  for (uint64_t size : sizes(o)) largest = std::max(largest, size);
  const uint64_t bytes = std::max<uint64_t>(largest, 4096);
  Side server, client;
  if (!server.open(o, bytes, error)) return fail("server: " + error);
  if (!client.open(o, bytes, error)) return fail("client: " + error);
  const uint32_t mtu = o.mtu ? o.mtu : 1024;
  const PeerInfo to_server = server.info(0x5E), to_client = client.info(0xC1);
  if (int e = server.connect(to_client, 0x5E, o, mtu_enum(mtu))) return fail("server QP: " + std::string(strerror(e)));
  if (int e = client.connect(to_server, 0xC1, o, mtu_enum(mtu))) return fail("client QP: " + std::string(strerror(e)));
  RunInfo run;
  run.device = o.ib_dev.empty() ? client.conn->device_name() + " (uroced " + o.daemon + ")" : o.ib_dev;
  run.mtu = mtu;
  run.local.push_back(to_client);
  run.remote.push_back(to_server);
  print_banner(o, run);
  o.kind == Kind::bw ? print_bw_header(o) : print_lat_header(o);
  std::string failure;
  for (uint64_t size : sizes(o)) {
    if (o.kind == Kind::bw) {
      const BwResult r = run_bw(client, server, to_server, o, size);
      print_bw_row(o, r);
      failure = r.error;
    } else {
      const LatResult r = run_lat(client, server, to_server, to_client, o, size);
      print_lat_row(o, r);
      failure = r.error;
    }
    if (!failure.empty()) break;
  }
  print_footer(o);
  std::printf(" uroce: through uroced at %s%s\n", o.daemon.c_str(),
              o.verify && failure.empty() ? "; data verified" : "");
  if (!failure.empty()) return fail(failure);
  std::fflush(nullptr);
  return 0;
}

}  // namespace uroce::perf
