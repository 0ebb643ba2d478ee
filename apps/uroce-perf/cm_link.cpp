// SPDX-License-Identifier: BSD-3-Clause
#include "cm_link.h"

#include <poll.h>

#include <chrono>
#include <cstring>
#include <optional>

namespace uroce::perf {
namespace {

using Clock = std::chrono::steady_clock;

// Receives kept posted on the conversation's QP: perftest never has more
// than one step in flight, the rest is slack for a peer that runs ahead.
constexpr uint64_t kRecvSlots = 16;
constexpr uint64_t kSlotBytes = 1024;  // the largest step is a 56-byte record
constexpr uint64_t kSendSlot = kRecvSlots;
// How long a receive is still looked for once the peer is down.
constexpr auto kLastWords = std::chrono::milliseconds(100);

}  // namespace

std::unique_ptr<CmLink> CmLink::open(Device& dev, std::string& error) {
  auto m = cm::ConnectionManager::open(dev, error);
  if (!m) return nullptr;
  auto l = std::unique_ptr<CmLink>(new CmLink());
  l->m_ = std::move(m);
  return l;
}

void CmLink::pump() {
  cm::Event e;
  while (m_->get_event(e)) {
    if (e.type == cm::EventType::disconnected) down_.insert(e.id);
    queued_.push_back(std::move(e));
  }
}

bool CmLink::disconnected(uint64_t id) {
  pump();
  return down_.count(id) != 0;
}

bool CmLink::wait(const std::function<bool(const cm::Event&)>& want, Millis timeout,
                  const std::function<void()>& idle, cm::Event& out, std::string& error) {
  const auto until = Clock::now() + timeout;
  for (;;) {
    pump();
    for (auto it = queued_.begin(); it != queued_.end(); ++it) {
      if (!want(*it)) continue;
      out = std::move(*it);
      queued_.erase(it);
      return true;
    }
    if (timeout.count() && Clock::now() >= until)
      return error = "no connection event within " + std::to_string(timeout.count()) + " ms", false;
    pollfd p{m_->event_fd(), POLLIN, 0};
    ::poll(&p, 1, 10);
    if (idle) idle();
  }
}

bool CmLink::connect(QueuePair& qp, const wire::IpAddr& peer, uint16_t port, const cm::ConnParam& p, Millis timeout,
                     const std::function<void()>& idle, uint64_t& id, std::string& error) {
  if (const int rc = m_->connect(qp, peer, port, p, id))
    return error = "couldn't send the connection request: " + std::string(std::strerror(rc)), false;
  const uint64_t mine = id;
  cm::Event e;
  if (!wait([mine](const cm::Event& ev) { return ev.id == mine; }, timeout, idle, e, error)) return false;
  if (e.type != cm::EventType::established) return error = cm::describe(e), false;
  return true;
}

bool CmLink::accept(QueuePair& qp, const cm::ConnParam& p, Millis request_timeout, Millis timeout,
                    const std::function<void()>& idle, uint64_t& id, wire::IpAddr& peer, std::string& error) {
  cm::Event req;
  const auto is_request = [](const cm::Event& ev) { return ev.type == cm::EventType::connect_request && !ev.ud; };
  if (!wait(is_request, request_timeout, idle, req, error))
    return error = "no connection request: " + error, false;
  id = req.id;
  peer = req.peer;
  if (const int rc = m_->accept(id, qp, p))
    return error = "couldn't accept the connection: " + std::string(std::strerror(rc)), false;
  const uint64_t mine = id;
  cm::Event e;
  if (!wait([mine](const cm::Event& ev) { return ev.id == mine; }, timeout, idle, e, error))
    return error = "the client did not complete the connection: " + error, false;
  if (e.type != cm::EventType::established) return error = cm::describe(e), false;
  return true;
}

void CmLink::disconnect(uint64_t id, Millis timeout) {
  if (!disconnected(id)) m_->disconnect(id);
  const auto until = Clock::now() + timeout;
  while (!disconnected(id) && Clock::now() < until) {
    pollfd p{m_->event_fd(), POLLIN, 0};
    ::poll(&p, 1, 10);
  }
}

std::unique_ptr<CmChannel> CmChannel::create(Device& dev, CmLink& link, std::string& error) {
  auto c = std::unique_ptr<CmChannel>(new CmChannel());
  c->link_ = &link;
  c->dev_ = &dev;
  int err = 0;
  c->pd_ = dev.alloc_pd();
  c->scq_ = dev.create_cq(4, err);
  if (c->scq_) c->rcq_ = dev.create_cq(int(kRecvSlots), err);
  if (!c->rcq_) return error = "-R: create_cq: " + std::string(std::strerror(err)), nullptr;
  c->mr_ = c->pd_->alloc_mr((kRecvSlots + 1) * kSlotBytes, IBV_ACCESS_LOCAL_WRITE, err);
  if (!c->mr_) return error = "-R: alloc_mr: " + std::string(std::strerror(err)), nullptr;
  QpInitAttr init;
  init.send_cq = c->scq_.get();
  init.recv_cq = c->rcq_.get();
  init.qp_type = IBV_QPT_RC;
  init.cap.max_send_wr = 2;
  init.cap.max_recv_wr = kRecvSlots;
  init.cap.max_send_sge = init.cap.max_recv_sge = 1;
  c->qp_ = c->pd_->create_qp(init, err);
  if (!c->qp_) return error = "-R: create_qp: " + std::string(std::strerror(err)), nullptr;
  if (!c->reset()) return error = "-R: couldn't post the conversation's receives", nullptr;
  return c;
}

// Receives wait in INIT for the connection (RESET takes none); the
// manager takes the QP from INIT on.
bool CmChannel::reset() {
  stashed_ = false;
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_RESET;
  if (qp_->modify(a, IBV_QP_STATE)) return false;
  a.qp_state = IBV_QPS_INIT;
  a.port_num = 1;
  a.qp_access_flags = 0;
  if (qp_->modify(a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS)) return false;
  for (uint64_t s = 0; s < kRecvSlots; ++s)
    if (!repost(s)) return false;
  return true;
}

CmChannel::~CmChannel() {
  if (qp_) link_->manager().detach_qp(*qp_);
  qp_.reset();
  if (mr_) pd_->dereg_mr(mr_);
}

bool CmChannel::repost(uint64_t slot) {
  ibv_sge sge{reinterpret_cast<uintptr_t>(mr_->addr()) + slot * kSlotBytes, uint32_t(kSlotBytes), mr_->lkey()};
  RecvWr wr;
  wr.wr_id = slot;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  const RecvWr* bad = nullptr;
  return qp_->post_recv(&wr, &bad) == 0;
}

bool CmChannel::send(const void* data, size_t n, std::string& error) {
  if (n > kSlotBytes) return error = "-R: a step of " + std::to_string(n) + " bytes does not fit a SEND slot", false;
  uint8_t* slot = static_cast<uint8_t*>(mr_->addr()) + kSendSlot * kSlotBytes;
  std::memcpy(slot, data, n);
  ibv_sge sge{reinterpret_cast<uintptr_t>(slot), uint32_t(n), mr_->lkey()};
  SendWr wr;
  wr.wr_id = kSendSlot;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_SEND;
  wr.send_flags = IBV_SEND_SIGNALED;
  const SendWr* bad = nullptr;
  if (const int rc = qp_->post_send(&wr, &bad))
    return error = "posting a SEND to " + peer_ + " failed: " + std::strerror(rc), false;
  const auto until = Clock::now() + timeout_;
  ibv_wc wc{};
  while (scq_->poll(1, &wc) == 0) {
    if (timeout_.count() && Clock::now() >= until)
      return error = "timed out after " + std::to_string(timeout_.count()) + " ms sending " + std::to_string(n) +
                     " bytes to " + peer_,
             false;
    if (idle_) idle_();
  }
  if (wc.status != IBV_WC_SUCCESS)
    return error = "a SEND to " + peer_ + " failed: " + ibv_wc_status_str(wc.status) +
                   (link_->disconnected(id_) ? " (the peer disconnected)" : ""),
           false;
  return true;
}

bool CmChannel::next_recv(ibv_wc& wc, bool& eof, std::string& error) {
  eof = false;
  if (stashed_) {
    stashed_ = false;
    wc = stash_;
    return true;
  }
  const auto until = Clock::now() + timeout_;
  std::optional<Clock::time_point> down_since;
  while (rcq_->poll(1, &wc) == 0) {
    // The peer's SENDs come before its DREQ; once it is down, what it sent
    // is in the CQ within a few engine turns, and nothing more will come.
    if (!down_since && link_->disconnected(id_)) down_since = Clock::now();
    if (down_since && Clock::now() - *down_since > kLastWords) return eof = true, true;
    if (timeout_.count() && Clock::now() >= until)
      return error = "timed out after " + std::to_string(timeout_.count()) + " ms waiting for " + peer_, false;
    if (idle_) idle_();
  }
  return true;
}

bool CmChannel::recv_or_eof(void* data, size_t n, bool& eof, std::string& error) {
  ibv_wc wc{};
  if (!next_recv(wc, eof, error) || eof) return !eof ? false : true;
  // A flushed receive: the QP went to the error state with the connection.
  // The peer's last SEND, completed before, may still be behind it.
  while (wc.status == IBV_WC_WR_FLUSH_ERR) {
    const auto until = Clock::now() + kLastWords;
    while (rcq_->poll(1, &wc) == 0)
      if (Clock::now() >= until) return eof = link_->disconnected(id_), eof ? true : (error = "a receive was flushed", false);
  }
  if (wc.status != IBV_WC_SUCCESS) {
    return error = "a receive from " + peer_ + " failed: " + ibv_wc_status_str(wc.status), false;
  }
  if (wc.byte_len != n)
    return error = peer_ + " sent " + std::to_string(wc.byte_len) + " bytes where this step takes " +
                   std::to_string(n) + " (not perftest -R at the same step?)",
           false;
  std::memcpy(data, static_cast<const uint8_t*>(mr_->addr()) + wc.wr_id * kSlotBytes, n);
  if (!repost(wc.wr_id)) return error = "couldn't post a receive again", false;
  return true;
}

bool CmChannel::recv(void* data, size_t n, std::string& error) {
  bool eof = false;
  if (!recv_or_eof(data, n, eof, error)) return false;
  if (eof) return error = peer_ + " disconnected", false;
  return true;
}

bool CmChannel::linger(Millis timeout) {
  link_->disconnect(id_, timeout);
  return link_->disconnected(id_);
}

bool CmChannel::peer_closed() const { return link_->disconnected(id_); }

bool CmChannel::peer_spoke() const {
  if (!stashed_ && rcq_->poll(1, &stash_) == 1) stashed_ = true;
  return stashed_ || link_->disconnected(id_);
}

}  // namespace uroce::perf
