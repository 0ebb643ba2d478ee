// SPDX-License-Identifier: BSD-3-Clause
// verbs_tour: a first program against the uroce verbs API.
//
// Two uroce devices are joined by a simulated Ethernet wire, so this runs
// anywhere: no NIC, no hugepages, no root. Every verb is run once, its
// result checked, and one line printed per verb. The exit status is 0 only
// if everything matched.
//
// If you know libibverbs, this will look familiar on purpose: the structs
// and enums are rdma-core's own (ibv_qp_attr, ibv_wc, ibv_sge, IBV_WR_*,
// IBV_QP_* masks), and the calls map one to one (alloc_pd = ibv_alloc_pd,
// create_cq = ibv_create_cq, post_send = ibv_post_send, ...). What differs:
//   * objects are C++ and owned by std::unique_ptr (destroy = reset);
//   * errors come back as errno values, not -1 + errno;
//   * nothing runs behind your back: the transport makes progress only when
//     you poll the device (here the SimFabric polls both for us).
#include <arpa/inet.h>  // htonl: imm_data travels in network byte order, as in verbs
#include <rte_eal.h>

#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "sim_fabric.h"
#include "uroce/verbs/verbs.h"

namespace {

using namespace uroce;

// DPDK must be up before any device exists (devices allocate their packet
// buffers from DPDK pools). These flags need no hugepages and leave nothing
// behind in /dev/hugepages or /var/run/dpdk; --no-huge rules out
// --in-memory, hence --no-shconf.
bool start_eal(const char* prog) {
  std::vector<std::string> args = {prog,       "--no-huge", "-m", "256", "--no-shconf", "--no-pci",
                                   "--no-telemetry", "-l",  "0",  "--log-level=error"};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  return rte_eal_init(int(argv.size()), argv.data()) >= 0;
}

constexpr int kAccess =
    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
constexpr size_t kBufBytes = 1 << 20;
constexpr uint32_t kQkey = 0x11111111;  // UD: both ends must agree on it

// Everything one side of the tour owns. Members are declared in the order
// they must be created; C++ destroys them in reverse, which is also the
// order verbs requires (QPs before the CQ and MR they use, all before the PD).
struct Node {
  Device* dev = nullptr;
  std::unique_ptr<ProtectionDomain> pd;
  std::unique_ptr<CompletionQueue> cq;
  std::unique_ptr<MemoryRegion> mr;
  std::unique_ptr<QueuePair> rc;
  std::unique_ptr<QueuePair> ud;

  uint8_t* buf(size_t off = 0) const { return static_cast<uint8_t*>(mr->addr()) + off; }
  uint64_t addr(size_t off = 0) const { return reinterpret_cast<uintptr_t>(mr->addr()) + off; }
};

bool make_node(Device& dev, Node& n) {
  n.dev = &dev;
  n.pd = dev.alloc_pd();
  int err = 0;
  // One CQ for both queues of both QPs keeps the tour short; a real
  // application often gives sends and receives their own CQs.
  n.cq = dev.create_cq(256, err);
  if (err) return false;
  // alloc_mr hands out DPDK memory (hugepages when EAL has them), which
  // is what the NIC path wants; reg_mr registers memory you already own.
  n.mr = n.pd->alloc_mr(kBufBytes, kAccess, err);
  if (err) return false;

  QpInitAttr init;
  init.send_cq = n.cq.get();
  init.recv_cq = n.cq.get();
  init.cap.max_send_wr = 16;
  init.cap.max_recv_wr = 16;
  init.cap.max_send_sge = 1;
  init.cap.max_recv_sge = 1;
  init.qp_type = IBV_QPT_RC;
  n.rc = n.pd->create_qp(init, err);
  if (err) return false;
  init.qp_type = IBV_QPT_UD;
  n.ud = n.pd->create_qp(init, err);
  return err == 0;
}

// The address of a device as verbs names it: GID 0 of port 1. On RoCEv2 a
// GID is an IPv6 address (an IPv4 one is mapped into ::ffff:a.b.c.d).
ibv_ah_attr address_of(const Device& remote) {
  ibv_ah_attr ah{};
  ah.is_global = 1;  // RoCE always routes by GID
  ah.port_num = 1;
  std::memcpy(ah.grh.dgid.raw, remote.gids()[0].bytes.data(), 16);
  return ah;
}

// RC connection setup, exactly as with libibverbs. In a real deployment the
// peer's QP number and starting PSN arrive out of band (a TCP socket, rdma_cm);
// here both ends are in this process, so they are simply passed in.
int connect_rc(QueuePair& qp, const Device& remote, uint32_t remote_qpn, uint32_t my_psn, uint32_t remote_psn) {
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_INIT;
  a.pkey_index = 0;
  a.port_num = 1;
  a.qp_access_flags = kAccess;  // what the *peer* may do to our memory through this QP
  if (int e = qp.modify(a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS)) return e;

  // Ready to receive: who the peer is and which PSN to expect first.
  a = {};
  a.qp_state = IBV_QPS_RTR;
  a.path_mtu = IBV_MTU_1024;
  a.dest_qp_num = remote_qpn;
  a.rq_psn = remote_psn;
  a.max_dest_rd_atomic = 4;  // READs/atomics the peer may have in flight to us
  a.min_rnr_timer = 1;       // how long a sender waits when we have no receive posted
  a.ah_attr = address_of(remote);
  if (int e = qp.modify(a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                               IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
    return e;

  // Ready to send: our first PSN, and how hard to try before giving up.
  a = {};
  a.qp_state = IBV_QPS_RTS;
  a.sq_psn = my_psn;
  a.timeout = 14;  // 4.096 us * 2^14 = 67 ms without an ACK before a retry
  a.retry_cnt = 7;
  a.rnr_retry = 7;  // 7 = retry forever while the peer has no receive posted
  a.max_rd_atomic = 4;
  return qp.modify(a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                          IBV_QP_MAX_QP_RD_ATOMIC);
}

// UD needs no peer: each send names its destination. The Q_Key guards
// against stray datagrams.
int bring_up_ud(QueuePair& qp) {
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_INIT;
  a.pkey_index = 0;
  a.port_num = 1;
  a.qkey = kQkey;
  if (int e = qp.modify(a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY)) return e;
  a = {};
  a.qp_state = IBV_QPS_RTR;
  if (int e = qp.modify(a, IBV_QP_STATE)) return e;
  a = {};
  a.qp_state = IBV_QPS_RTS;
  a.sq_psn = 0;
  return qp.modify(a, IBV_QP_STATE | IBV_QP_SQ_PSN);
}

int post_recv(Node& n, QueuePair& qp, uint64_t wr_id, size_t off, uint32_t len) {
  ibv_sge sge{n.addr(off), len, n.mr->lkey()};
  RecvWr wr;
  wr.wr_id = wr_id;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  const RecvWr* bad = nullptr;
  return qp.post_recv(&wr, &bad);
}

// Work requests are copied when posted, so `wr` and its SGE may live on
// the stack of the caller (as with ibv_post_send).
int post(Node& n, SendWr& wr, size_t off, uint32_t len) {
  ibv_sge sge{n.addr(off), len, n.mr->lkey()};
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.send_flags |= IBV_SEND_SIGNALED;  // we want a completion for every request
  const SendWr* bad = nullptr;
  return n.rc->post_send(&wr, &bad);
}

// Runs the simulated wire until `n` completions arrived on the node's CQ.
// The time is virtual: a retransmission timeout costs nothing.
std::vector<ibv_wc> wait(sim::SimFabric& fabric, Node& node, size_t n) {
  std::vector<ibv_wc> got;
  fabric.run_until(
      [&] {
        ibv_wc wc[8];
        int k;
        while ((k = node.cq->poll(8, wc)) > 0) got.insert(got.end(), wc, wc + k);
        return got.size() >= n;
      },
      1'000'000'000ull);
  return got;
}

void fill(uint8_t* p, size_t n, uint8_t seed) {
  for (size_t i = 0; i < n; ++i) p[i] = uint8_t(seed + i * 7);
}

int failures = 0;

void report(const char* verb, bool ok, const std::string& detail) {
  std::printf("%-16s %s  %s\n", verb, ok ? "ok  " : "FAIL", detail.c_str());
  if (!ok) ++failures;
}

// A post that fails (errno) is reported as the verb's failure.
bool posted(const char* verb, int err) {
  if (err) report(verb, false, "post failed with errno " + std::to_string(err));
  return err == 0;
}

// One completion with the expected status and opcode.
bool completed(const std::vector<ibv_wc>& wc, ibv_wc_opcode opcode) {
  return wc.size() == 1 && wc[0].status == IBV_WC_SUCCESS && wc[0].opcode == opcode;
}

// Buffer layout on both nodes (offsets into the 1 MiB region).
constexpr size_t kSrc = 0;          // what a node sends, writes or reads from
constexpr size_t kDst = 256 << 10;  // where data lands
constexpr size_t kWord = 512 << 10; // the 64-bit word the atomics work on (8-byte aligned)
constexpr size_t kOld = kWord + 64; // where an atomic's original value is returned

void rc_send(sim::SimFabric& f, Node& a, Node& b) {
  const uint32_t len = 4000;  // four packets at MTU 1024: segmentation included
  fill(a.buf(kSrc), len, 1);
  // A receive must be waiting (else the sender gets an RNR NAK and retries).
  if (!posted("SEND", post_recv(b, *b.rc, 100, kDst, 8192))) return;
  SendWr wr;
  wr.wr_id = 1;
  wr.opcode = IBV_WR_SEND;
  if (!posted("SEND", post(a, wr, kSrc, len))) return;
  const auto got_a = wait(f, a, 1), got_b = wait(f, b, 1);
  const bool ok = completed(got_a, IBV_WC_SEND) && completed(got_b, IBV_WC_RECV) && got_b[0].byte_len == len &&
                  std::memcmp(a.buf(kSrc), b.buf(kDst), len) == 0;
  report("SEND", ok, std::to_string(len) + " bytes into a posted receive");
}

void rc_send_imm(sim::SimFabric& f, Node& a, Node& b) {
  const uint32_t imm = htonl(0xC0FFEE);
  fill(a.buf(kSrc), 100, 2);
  if (!posted("SEND_WITH_IMM", post_recv(b, *b.rc, 101, kDst, 8192))) return;
  SendWr wr;
  wr.wr_id = 2;
  wr.opcode = IBV_WR_SEND_WITH_IMM;
  wr.imm_data = imm;
  if (!posted("SEND_WITH_IMM", post(a, wr, kSrc, 100))) return;
  const auto got_a = wait(f, a, 1), got_b = wait(f, b, 1);
  const bool ok = completed(got_a, IBV_WC_SEND) && completed(got_b, IBV_WC_RECV) &&
                  (got_b[0].wc_flags & IBV_WC_WITH_IMM) && got_b[0].imm_data == imm && got_b[0].byte_len == 100 &&
                  std::memcmp(a.buf(kSrc), b.buf(kDst), 100) == 0;
  char detail[64];
  std::snprintf(detail, sizeof detail, "100 bytes + immediate 0x%x", ntohl(got_b.empty() ? 0 : got_b[0].imm_data));
  report("SEND_WITH_IMM", ok, detail);
}

void rc_write(sim::SimFabric& f, Node& a, Node& b) {
  const uint32_t len = 16384;
  fill(a.buf(kSrc), len, 3);
  // No receive: a WRITE places data straight into the peer's memory, by
  // address and rkey, and the peer's CPU hears nothing of it.
  SendWr wr;
  wr.wr_id = 3;
  wr.opcode = IBV_WR_RDMA_WRITE;
  wr.wr.rdma.remote_addr = b.addr(kDst);
  wr.wr.rdma.rkey = b.mr->rkey();
  if (!posted("WRITE", post(a, wr, kSrc, len))) return;
  const auto got_a = wait(f, a, 1);
  const bool ok = completed(got_a, IBV_WC_RDMA_WRITE) && std::memcmp(a.buf(kSrc), b.buf(kDst), len) == 0 &&
                  b.cq->size() == 0;
  report("WRITE", ok, std::to_string(len) + " bytes, no completion at the target");
}

void rc_write_imm(sim::SimFabric& f, Node& a, Node& b) {
  const uint32_t len = 3000, imm = htonl(42);
  fill(a.buf(kSrc), len, 4);
  // The data goes where the WRITE says; the immediate consumes a receive
  // (its buffer stays untouched) so the target learns that data arrived.
  if (!posted("WRITE_WITH_IMM", post_recv(b, *b.rc, 102, kDst + 100000, 16))) return;
  SendWr wr;
  wr.wr_id = 4;
  wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
  wr.imm_data = imm;
  wr.wr.rdma.remote_addr = b.addr(kDst);
  wr.wr.rdma.rkey = b.mr->rkey();
  if (!posted("WRITE_WITH_IMM", post(a, wr, kSrc, len))) return;
  const auto got_a = wait(f, a, 1), got_b = wait(f, b, 1);
  const bool ok = completed(got_a, IBV_WC_RDMA_WRITE) && completed(got_b, IBV_WC_RECV_RDMA_WITH_IMM) &&
                  got_b[0].imm_data == imm && got_b[0].byte_len == len &&
                  std::memcmp(a.buf(kSrc), b.buf(kDst), len) == 0;
  report("WRITE_WITH_IMM", ok, std::to_string(len) + " bytes, the target is told by a completion");
}

void rc_read(sim::SimFabric& f, Node& a, Node& b) {
  const uint32_t len = 10000;
  fill(b.buf(kSrc), len, 5);
  SendWr wr;
  wr.wr_id = 5;
  wr.opcode = IBV_WR_RDMA_READ;
  wr.wr.rdma.remote_addr = b.addr(kSrc);
  wr.wr.rdma.rkey = b.mr->rkey();
  if (!posted("READ", post(a, wr, kDst, len))) return;  // the local SGE is where the data lands
  const auto got_a = wait(f, a, 1);
  const bool ok = completed(got_a, IBV_WC_RDMA_READ) && got_a[0].byte_len == len &&
                  std::memcmp(a.buf(kDst), b.buf(kSrc), len) == 0;
  report("READ", ok, std::to_string(len) + " bytes pulled from the peer");
}

uint64_t load64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

void store64(uint8_t* p, uint64_t v) { std::memcpy(p, &v, 8); }

void rc_cmp_swap(sim::SimFabric& f, Node& a, Node& b) {
  store64(b.buf(kWord), 42);
  // The atomic happens at the responder; the value that was there before
  // comes back into our 8-byte SGE (host byte order, as verbs does it).
  SendWr wr;
  wr.wr_id = 6;
  wr.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
  wr.wr.atomic.remote_addr = b.addr(kWord);  // must be 8-byte aligned
  wr.wr.atomic.rkey = b.mr->rkey();
  wr.wr.atomic.compare_add = 42;
  wr.wr.atomic.swap = 7;
  if (!posted("CMP_AND_SWP", post(a, wr, kOld, 8))) return;
  const auto got_a = wait(f, a, 1);
  const uint64_t old = load64(a.buf(kOld)), now = load64(b.buf(kWord));
  const bool ok = completed(got_a, IBV_WC_COMP_SWAP) && old == 42 && now == 7;
  report("CMP_AND_SWP", ok, "42 == 42, so 7 was stored; returned " + std::to_string(old) + ", now " + std::to_string(now));
}

void rc_fetch_add(sim::SimFabric& f, Node& a, Node& b) {
  SendWr wr;
  wr.wr_id = 7;
  wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
  wr.wr.atomic.remote_addr = b.addr(kWord);
  wr.wr.atomic.rkey = b.mr->rkey();
  wr.wr.atomic.compare_add = 5;
  if (!posted("FETCH_AND_ADD", post(a, wr, kOld, 8))) return;
  const auto got_a = wait(f, a, 1);
  const uint64_t old = load64(a.buf(kOld)), now = load64(b.buf(kWord));
  const bool ok = completed(got_a, IBV_WC_FETCH_ADD) && old == 7 && now == 12;
  report("FETCH_AND_ADD", ok, "7 + 5; returned " + std::to_string(old) + ", now " + std::to_string(now));
}

void ud_send(sim::SimFabric& f, Node& a, Node& b) {
  constexpr uint32_t kGrh = 40;  // every UD receive starts with a 40-byte GRH slot
  const uint32_t len = 512;
  fill(a.buf(kSrc), len, 8);
  if (!posted("UD SEND", post_recv(b, *b.ud, 103, kDst, kGrh + 1024))) return;
  // The address handle resolves the destination once; each datagram then
  // names it together with the remote QP number and Q_Key.
  int err = 0;
  auto ah = a.pd->create_ah(address_of(*b.dev), err);
  if (err) return report("UD SEND", false, "create_ah failed: errno " + std::to_string(err));
  ibv_sge sge{a.addr(kSrc), len, a.mr->lkey()};
  SendWr wr;
  wr.wr_id = 8;
  wr.opcode = IBV_WR_SEND;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.wr.ud.ah = ah.get();
  wr.wr.ud.remote_qpn = b.ud->qp_num();
  wr.wr.ud.remote_qkey = kQkey;
  const SendWr* bad = nullptr;
  if (!posted("UD SEND", a.ud->post_send(&wr, &bad))) return;
  const auto got_a = wait(f, a, 1), got_b = wait(f, b, 1);
  const bool ok = completed(got_a, IBV_WC_SEND) && completed(got_b, IBV_WC_RECV) && got_b[0].byte_len == kGrh + len &&
                  got_b[0].src_qp == a.ud->qp_num() && std::memcmp(a.buf(kSrc), b.buf(kDst + kGrh), len) == 0;
  report("UD SEND", ok, std::to_string(len) + " bytes after the 40-byte GRH, from QP " +
                            std::to_string(a.ud->qp_num()));
}

int tour() {
  // The seed fixes every random choice of the simulated wire (none matter
  // here: the wire is perfect unless told otherwise, see LinkFaults).
  sim::SimFabric fabric(/*seed=*/1);
  Device& dev_a = fabric.add_device("10.0.0.1");
  Device& dev_b = fabric.add_device("10.0.0.2");
  std::printf("devices %s (%s) and %s (%s) on a simulated wire\n", dev_a.name().c_str(),
              dev_a.gids()[0].to_string().c_str(), dev_b.name().c_str(), dev_b.gids()[0].to_string().c_str());

  Node a, b;
  if (!make_node(dev_a, a) || !make_node(dev_b, b)) {
    std::fprintf(stderr, "verbs_tour: could not create the PD/CQ/MR/QPs\n");
    return 1;
  }
  if (connect_rc(*a.rc, dev_b, b.rc->qp_num(), 1000, 5000) ||
      connect_rc(*b.rc, dev_a, a.rc->qp_num(), 5000, 1000) || bring_up_ud(*a.ud) || bring_up_ud(*b.ud)) {
    std::fprintf(stderr, "verbs_tour: could not bring the QPs up\n");
    return 1;
  }
  std::printf("RC QP %u <-> RC QP %u connected; UD QPs %u and %u ready\n", a.rc->qp_num(), b.rc->qp_num(),
              a.ud->qp_num(), b.ud->qp_num());

  rc_send(fabric, a, b);
  rc_send_imm(fabric, a, b);
  rc_write(fabric, a, b);
  rc_write_imm(fabric, a, b);
  rc_read(fabric, a, b);
  rc_cmp_swap(fabric, a, b);
  rc_fetch_add(fabric, a, b);
  ud_send(fabric, a, b);

  const DeviceCounters c = dev_a.counters();
  std::printf("device A sent %" PRIu64 " frames, retransmitted %" PRIu64 "\n", c.tx_frames,
              c.transport.retransmitted_pkts);
  std::printf("%s\n", failures ? "SOME VERBS FAILED" : "all verbs ok");
  return failures ? 1 : 0;
}

}  // namespace

int main(int, char** argv) {
  if (!start_eal(argv[0])) {
    std::fprintf(stderr, "verbs_tour: rte_eal_init failed\n");
    return 2;
  }
  // tour() returns only after every uroce object is gone, as EAL must
  // outlive them (their packet buffers are DPDK memory).
  const int rc = tour();
  rte_eal_cleanup();
  return rc;
}
