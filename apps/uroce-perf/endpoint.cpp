// SPDX-License-Identifier: BSD-3-Clause
#include "endpoint.h"

#include <fcntl.h>
#include <poll.h>
#include <rte_eal.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "uroce/port/endpoint.h"

namespace uroce::perf {
namespace {

constexpr int kAccess =
    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;

// perftest's QP access flags: only what the test's verb needs. A peer that
// runs another test then fails at its first operation (a remote access
// error) instead of completing a test nobody asked for.
int qp_access(Verb v) {
  switch (v) {
    case Verb::write: return IBV_ACCESS_REMOTE_WRITE;
    case Verb::read: return IBV_ACCESS_REMOTE_READ;
    case Verb::atomic: return IBV_ACCESS_REMOTE_ATOMIC;
    case Verb::send: return IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_LOCAL_WRITE;
    case Verb::raw: break;
  }
  return kAccess;
}

std::string errno_text(const char* what, int err) { return std::string(what) + ": " + std::strerror(err); }

}  // namespace

uint64_t buffer_bytes(const Options& o) {
  uint64_t biggest = 0;
  for (uint64_t s : sizes(o)) biggest = std::max(biggest, s);
  return (2 * (biggest + kGrhBytes) + 4095) / 4096 * 4096;
}

std::unique_ptr<Endpoint> Endpoint::create(Device& dev, const Options& o, uint64_t buf_bytes, uint32_t psn_seed,
                                           std::string& error) {
  std::unique_ptr<Endpoint> e(new Endpoint());
  e->dev_ = &dev;
  e->buf_bytes_ = buf_bytes;
  // Latency tests and -b: this side sends from the first half and the
  // peer's data lands in the second.
  e->exposed_offset_ = o.kind == Kind::lat || o.bidirectional ? buf_bytes / 2 : 0;
  e->opts_ = o;
  e->ud_ = o.conn == Conn::ud;
  if (o.gid_index >= int(dev.gids().size()))
    return error = "-x " + std::to_string(o.gid_index) + ": the device has GIDs 0.." +
                   std::to_string(dev.gids().size() - 1),
           nullptr;
  e->gid_index_ = o.gid_index;
  // DPDK memory is hugepage memory unless the EAL runs without (--no-huge).
  if (o.use_hugepages && !rte_eal_has_hugepages())
    return error = "--use_hugepages: no hugepages (the EAL runs with --no-huge; reserve some: "
                   "echo 512 > /proc/sys/vm/nr_hugepages)",
           nullptr;
  e->pd_ = dev.alloc_pd();
  int err = 0;
  const uint32_t depth = std::max<uint32_t>(o.tx_depth, 1);
  // Only SEND tests post receives: the others' QPs get a receive queue of
  // one (-r), which with thousands of QPs is most of their memory saved.
  const bool receives = o.verb == Verb::send;
  const uint32_t rx_depth = receives ? std::max<uint32_t>(o.rx_depth, depth) : std::max<uint32_t>(o.rx_depth, 1);
  if (o.use_event) {
    if (!(e->channel_ = dev.create_comp_channel(err))) return error = errno_text("create_comp_channel", err), nullptr;
    const int fd = e->channel_->fd();
    if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) != 0)
      return error = errno_text("completion channel descriptor", errno), nullptr;
  }
  // perftest's check of -X, in its words.
  if (o.comp_vector >= dev.num_comp_vectors())
    return error = "Completion vector specified is invalid (max completion vector = " +
                   std::to_string(dev.num_comp_vectors() - 1) + ")",
           nullptr;
  // Room for every WR in flight (-t per QP; -b: this side's sends only, the
  // peer's arrive without completions here), and every receive posted (-r
  // per QP, or in all with the SRQ), up to the device's largest CQ: beyond
  // that a CQ keeps what does not fit in order (CompletionQueue), and the
  // loops poll long before that many complete.
  const uint64_t max_cqe = dev.limits().max_cqe;
  const uint64_t sends = uint64_t(depth) * o.num_qps + 64;
  const uint64_t recvs = receives ? uint64_t(rx_depth) * (o.use_srq ? 1 : o.num_qps) + 64 : 64;
  e->cq_ = dev.create_cq(int(std::min(sends, max_cqe)), e->channel_.get(), o.comp_vector, err);
  if (!e->cq_) return error = errno_text("create_cq", err), nullptr;
  e->rcq_ = dev.create_cq(int(std::min(recvs, max_cqe)), e->channel_.get(), o.comp_vector, err);
  if (!e->rcq_) return error = errno_text("create_cq", err), nullptr;
  if (e->channel_ && (e->cq_->req_notify(false) != 0 || e->rcq_->req_notify(false) != 0))
    return error = "Couldn't request CQ notification", nullptr;
  const size_t mrs = o.mr_per_qp ? o.num_qps : 1;
  for (size_t i = 0; i < mrs; ++i) {
    const uint64_t bytes = o.mr_per_qp ? buf_bytes : buf_bytes * o.num_qps;
    auto mr = e->pd_->alloc_mr(bytes, kAccess, err);
    if (!mr)
      return error = errno_text("alloc_mr", err) + " (" + std::to_string(bytes) +
                     " bytes of DPDK memory; give EAL more with --eal \"-m MB\")",
             nullptr;
    e->mrs_.push_back(std::move(mr));
  }
  if (o.use_srq) {
    SrqInitAttr sa;
    sa.max_wr = o.rx_depth;
    e->srq_ = e->pd_->create_srq(sa, err);
    if (!e->srq_) return error = errno_text("create_srq", err), nullptr;
  }
  for (uint32_t i = 0; i < o.num_qps; ++i) {
    QpInitAttr init;
    init.send_cq = e->cq_.get();
    init.recv_cq = e->rcq_.get();
    init.srq = e->srq_.get();
    init.qp_type = e->ud_ ? IBV_QPT_UD : o.conn == Conn::uc ? IBV_QPT_UC : IBV_QPT_RC;
    init.cap.max_send_wr = depth;
    init.cap.max_recv_wr = rx_depth;
    init.cap.max_send_sge = init.cap.max_recv_sge = 1;
    init.cap.max_inline_data = o.inline_size;
    auto qp = e->pd_->create_qp(init, err);
    if (!qp) return error = errno_text("create_qp", err), nullptr;
    e->qps_.push_back(std::move(qp));
    e->ahs_.emplace_back();
    e->psns_.push_back((psn_seed * 2654435761u + i * 977) & 0xFFFFFF);  // like lrand48 & 0xffffff
  }
  return e;
}

Endpoint::~Endpoint() {
  qps_.clear();
  ahs_.clear();
  srq_.reset();
  for (auto& mr : mrs_) pd_->dereg_mr(mr);
}

void wait_events(std::initializer_list<Endpoint*> eps, int timeout_ms) {
  pollfd fds[4];
  nfds_t n = 0;
  // The loop polled completions in its last turn: it may have work to do
  // now (post the next message), or be done.
  bool moved = false;
  for (Endpoint* e : eps) moved |= e->polled_since_last_look();
  if (moved) return;
  for (Endpoint* e : eps) {
    // A completion already in a CQ fired (or will not fire) its event
    // before this look: the run polls it first.
    if (!e->quiet()) return;
    if (n < 4) fds[n++] = pollfd{e->channel()->fd(), POLLIN, 0};
  }
  ::poll(fds, n, timeout_ms);
  for (Endpoint* e : eps) e->take_events();
}

void Endpoint::take_events() {
  CompletionQueue* cq = nullptr;
  while (channel_->get_event(cq) == 0) {
    cq->ack_events(1);
    cq->req_notify(false);
  }
}

int Endpoint::post_recv(size_t qp, const RecvWr* wr) {
  const RecvWr* bad = nullptr;
  return srq_ ? srq_->post_recv(wr, &bad) : qps_[qp]->post_recv(wr, &bad);
}

PeerInfo Endpoint::info(size_t qp) const {
  PeerInfo p;
  p.qpn = qps_[qp]->qp_num();
  p.psn = psns_[qp];
  p.rkey = rkey(qp);
  p.vaddr = addr(qp) + exposed_offset_;
  p.out_reads = opts_.out_reads ? opts_.out_reads : 16;  // -o, else the device's maximum (MAX_OUT_READ_HERMON)
  p.gid = dev_->gids()[gid_index_];
  return p;
}

int Endpoint::connect(size_t i, const PeerInfo& remote, const Options& o, ibv_mtu mtu) {
  if (ud_) return connect_ud(i, remote, o);
  RcConnectOptions c;
  c.sq_psn = psns_[i];
  c.path_mtu = mtu;
  c.access = qp_access(o.verb);
  c.timeout = o.qp_timeout;
  // perftest: this side's outstanding READs/atomics are the smaller of
  // both sides' -o.
  const uint32_t mine = o.out_reads ? o.out_reads : 16;
  c.max_rd_atomic = uint8_t(std::min<uint32_t>(std::min(remote.out_reads, mine), 128));
  c.max_dest_rd_atomic = uint8_t(std::min<uint32_t>(mine, 128));
  c.sgid_index = uint8_t(gid_index_);
  c.sl = o.sl;
  if (o.tclass >= 0) c.traffic_class = uint8_t(o.tclass);  // --tclass: the IP header's DSCP and ECN byte
  c.min_rnr_timer = 12;  // perftest's MIN_RNR_TIMER
  std::string ignored;   // the caller names the QP and the errno
  return uroce::connect_rc(*qps_[i], {remote.qpn, remote.psn, remote.gid}, c, ignored);
}

// perftest's UD QP: INIT with its Q_Key, RTR and RTS with nothing of the
// peer; the peer's QPN goes in each WR, its address in the AH (a GRH with
// hop limit 255, the -x source GID and --tclass).
int Endpoint::connect_ud(size_t i, const PeerInfo& remote, const Options& o) {
  QueuePair& qp = *qps_[i];
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_INIT;
  a.pkey_index = 0;
  a.port_num = 1;
  a.qkey = kUdQkey;
  if (int err = qp.modify(a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY)) return err;
  a = ibv_qp_attr{};
  a.qp_state = IBV_QPS_RTR;
  if (int err = qp.modify(a, IBV_QP_STATE)) return err;
  a.qp_state = IBV_QPS_RTS;
  a.sq_psn = psns_[i];
  if (int err = qp.modify(a, IBV_QP_STATE | IBV_QP_SQ_PSN)) return err;
  RcConnectOptions path;
  path.sgid_index = uint8_t(gid_index_);
  path.hop_limit = 0xFF;
  path.sl = o.sl;
  if (o.tclass >= 0) path.traffic_class = uint8_t(o.tclass);
  int err = 0;
  ahs_[i] = pd_->create_ah(roce_address(remote.gid, path), err);
  return ahs_[i] ? 0 : err;
}

}  // namespace uroce::perf
