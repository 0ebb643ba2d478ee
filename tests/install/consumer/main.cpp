// SPDX-License-Identifier: BSD-3-Clause
// An out-of-tree application of the installed liburoce: two endpoints on a
// real DPDK port pair (the ring PMD), joined by IPv6 GIDs so the peer is
// found by neighbour discovery; one RC QP each, connected by
// Endpoint::connect_rc; one RDMA WRITE, checked byte by byte; rdma-core's
// ibv_wc_status_str on the completion (libibverbs comes from uroce.pc);
// and the failures an application must be able to tell apart. Prints one
// line per check and exits 1 at the first that fails.
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>

#include <uroce/port/eal.h>
#include <uroce/port/endpoint.h>
#include <uroce/verbs/verbs.h>

namespace {

using namespace uroce;

constexpr size_t kBytes = 8192;  // several packets at path MTU 1024
constexpr int kAccess = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
constexpr std::chrono::milliseconds kTimeout{5000};

int failures = 0;

void check(bool ok, const std::string& what) {
  std::printf("%s: %s\n", ok ? "ok" : "FAILED", what.c_str());
  if (!ok) ++failures;
}

struct Side {
  std::unique_ptr<Endpoint> ep;
  std::unique_ptr<ProtectionDomain> pd;
  std::unique_ptr<CompletionQueue> cq;
  std::unique_ptr<MemoryRegion> mr;
  std::unique_ptr<QueuePair> qp;
  ~Side() {
    qp.reset();
    if (mr) pd->dereg_mr(mr);
  }
  uint8_t* buf() const { return static_cast<uint8_t*>(mr->addr()); }
};

std::unique_ptr<QueuePair> rc_qp(Side& s) {
  QpInitAttr init;
  init.send_cq = init.recv_cq = s.cq.get();
  init.qp_type = IBV_QPT_RC;
  init.cap.max_send_wr = init.cap.max_recv_wr = 8;
  init.cap.max_send_sge = init.cap.max_recv_sge = 1;
  int err = 0;
  return s.pd->create_qp(init, err);
}

bool make_side(std::unique_ptr<Endpoint> ep, Side& s) {
  s.ep = std::move(ep);
  s.pd = s.ep->device().alloc_pd();
  int err = 0;
  s.cq = s.ep->device().create_cq(32, err);
  if (s.cq) s.mr = s.pd->alloc_mr(kBytes, kAccess, err);
  if (s.mr) s.qp = rc_qp(s);
  return s.qp != nullptr;
}

int run() {
  std::string error;
  EalConfig eal;
  eal.quiet = true;
  std::unique_ptr<DpdkPort> pa, pb;
  if (!eal_init(eal, error) || !open_ring_pair("uroce_consumer", 1500, pa, pb, error)) {
    std::printf("FAILED: EAL and ring pair: %s\n", error.c_str());
    return 1;
  }
  EndpointConfig ca, cb;
  ca.ip = "not-an-address";
  check(!Endpoint::adopt(nullptr, ca, error), "adopt without a port fails");
  const bool refused = !Endpoint::adopt(std::move(pa), ca, error);
  check(refused && error.find("not an IPv4 or IPv6") != std::string::npos, "a bad ip is refused: " + error);
  // A refused adopt has taken the port: open the pair again.
  pb.reset();
  if (!open_ring_pair("uroce_consumer2", 1500, pa, pb, error)) {
    std::printf("FAILED: second ring pair: %s\n", error.c_str());
    return 1;
  }
  ca.ip = "fd00:75::1";
  cb.ip = "fd00:75::2";
  ca.device.name = "consumer_a";
  cb.device.name = "consumer_b";
  Side a, b;
  auto ea = Endpoint::adopt(std::move(pa), ca, error);
  auto eb = ea ? Endpoint::adopt(std::move(pb), cb, error) : nullptr;
  if (!eb || !make_side(std::move(ea), a) || !make_side(std::move(eb), b)) {
    std::printf("FAILED: endpoints and verbs objects: %s\n", error.c_str());
    return 1;
  }
  check(a.ep->gid().to_string() == "fd00:75::1", "GID 0 is the endpoint's ip: " + a.ep->gid().to_string());

  RcConnectOptions oa, ob;
  oa.sq_psn = 100;
  ob.sq_psn = 200;
  oa.access = ob.access = kAccess;
  const ibv_ah_attr ah = roce_address(b.ep->gid(), oa);
  check(ah.is_global == 1 && ah.grh.hop_limit == 64 && ah.grh.sgid_index == uroce::kAddressGidIndex &&
            std::memcmp(ah.grh.dgid.raw, b.ep->gid().bytes.data(), 16) == 0,
        "roce_address: global, hop limit 64, sgid index 1 (the address), dgid the peer's GID");

  const auto poll_a = [&] { a.ep->poll(); };
  const auto poll_b = [&] { b.ep->poll(); };
  int err = a.ep->connect_rc(*a.qp, {b.qp->qp_num(), 200, b.ep->gid()}, oa, kTimeout, error, poll_b);
  check(err == 0 && a.qp->state() == IBV_QPS_RTS, "A's QP connected to B through neighbour discovery: " +
                                                      std::string(err ? error : "RTS"));
  err = b.ep->connect_rc(*b.qp, {a.qp->qp_num(), 100, a.ep->gid()}, ob, kTimeout, error, poll_a);
  check(err == 0 && b.qp->state() == IBV_QPS_RTS, "B's QP connected to A: " + std::string(err ? error : "RTS"));
  wire::MacAddr mac;
  check(a.ep->device().neighbor_mac(b.ep->gid(), mac) && mac == b.ep->dpdk_port().mac(),
        "A resolved B's MAC to B's port MAC");

  for (size_t i = 0; i < kBytes; ++i) a.buf()[i] = uint8_t(i * 31 + 7);
  std::memset(b.buf(), 0, kBytes);
  ibv_sge sge{reinterpret_cast<uintptr_t>(a.buf()), uint32_t(kBytes), a.mr->lkey()};
  SendWr wr;
  wr.wr_id = 42;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_RDMA_WRITE;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.wr.rdma.remote_addr = reinterpret_cast<uintptr_t>(b.buf());
  wr.wr.rdma.rkey = b.mr->rkey();
  const SendWr* bad = nullptr;
  check(a.qp->post_send(&wr, &bad) == 0, "post_send RDMA WRITE");
  ibv_wc wc{};
  const auto until = std::chrono::steady_clock::now() + kTimeout;
  while (a.cq->poll(1, &wc) == 0 && std::chrono::steady_clock::now() < until) {
    a.ep->poll();
    b.ep->poll();
  }
  check(wc.wr_id == 42 && wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RDMA_WRITE,
        std::string("WRITE completed, ibv_wc_status_str: ") + ibv_wc_status_str(wc.status));
  size_t wrong = 0;
  for (size_t i = 0; i < kBytes; ++i) wrong += b.buf()[i] != uint8_t(i * 31 + 7);
  check(wrong == 0, "the " + std::to_string(kBytes) + " bytes written arrived intact (" + std::to_string(wrong) +
                        " wrong)");

  // A peer nobody answers for: RTR keeps saying EHOSTUNREACH until the
  // deadline, and the message says what was not heard.
  std::unique_ptr<QueuePair> lonely = rc_qp(a);
  wire::IpAddr nobody;
  wire::IpAddr::parse("fd00:75::99", nobody);
  err = a.ep->connect_rc(*lonely, {1, 0, nobody}, oa, std::chrono::milliseconds(300), error, poll_b);
  check(err == EHOSTUNREACH && error.find("no neighbour advertisement from fd00:75::99") != std::string::npos,
        "a silent peer: EHOSTUNREACH, " + error);
  lonely.reset();

  std::printf("consumer: %s\n", failures ? "FAILED" : "all checks passed");
  return failures ? 1 : 0;
}

}  // namespace

int main() { return run(); }
