// SPDX-License-Identifier: BSD-3-Clause
// PerftestSession: replays of the captured conversations (every byte we
// send must equal what perftest sent), a full session between two threads,
// and the version and framing checks.
#include <atomic>
#include <bit>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstring>
#include <deque>
#include <thread>

#include "capture_script.h"
#include "uroce/exchange/perftest.h"
#include "uroce/exchange/tcp_channel.h"
#include "uroce/wire/byte_order.h"

using namespace uroce::exchange;
using namespace std::chrono_literals;
using uroce::test::perftest_capture;
using uroce::test::as_string;
using uroce::test::TcpPayload;

namespace {

struct Connected {
  std::unique_ptr<TcpChannel> client, server;
};

// Client and server channels on a fresh port, each with its idle callback.
Connected connect(const Idle& client_idle = nullptr, const Idle& server_idle = nullptr) {
  std::string error;
  auto l = TcpListener::listen(0, error);
  REQUIRE(l);
  Connected c;
  std::string server_error;
  std::thread t([&] { c.server = l->accept(5000ms, server_idle, server_error); });
  c.client = TcpChannel::connect("127.0.0.1", l->port(), 5000ms, client_idle, error);
  t.join();
  INFO(error << " / " << server_error);
  REQUIRE(c.client);
  REQUIRE(c.server);
  return c;
}

// The steps of each captured test, in perftest's order (docs/exchange.md).
enum class Step { kVersions, kSysData, kMtu, kHandShake, kBarrier, kBwReports, kClose };
using enum Step;

std::vector<Step> flow_of(const std::string& test) {
  if (test == "write_bw" || test == "read_bw" || test == "atomic_bw")
    return {kVersions, kSysData, kMtu, kHandShake, kHandShake, kBarrier, kBarrier, kBwReports, kClose};
  if (test == "send_bw") return {kVersions, kSysData, kMtu, kHandShake, kHandShake, kBarrier, kBarrier, kClose};
  if (test == "read_lat") return {kVersions, kSysData, kMtu, kHandShake, kHandShake, kHandShake, kBarrier, kClose};
  if (test == "write_lat") return {kVersions, kSysData, kMtu, kHandShake, kHandShake, kHandShake, kBarrier};
  FAIL("no flow for " << test);
  return {};
}

PerftestDest dest_of(const std::vector<uint8_t>& b) {
  PerftestDest d;
  std::string error;
  INFO(error);
  REQUIRE(decode_perftest_dest(reinterpret_cast<const char*>(b.data()), b.size(), d, error));
  return d;
}

// Pops the capture's payloads of one side in order.
struct Side {
  std::deque<const TcpPayload*> q;
  const std::vector<uint8_t>& next(size_t len) {
    REQUIRE_FALSE(q.empty());
    REQUIRE(q.front()->bytes.size() == len);
    const auto& b = q.front()->bytes;
    q.pop_front();
    return b;
  }
  uint64_t be64() { return uroce::wire::load_be64(next(8).data()); }
  int32_t be32() { return int32_t(uroce::wire::load_be32(next(4).data())); }
};

PerftestBwReport report_of(Side& s) {
  PerftestBwReport r;
  r.size = s.be64();
  r.iters = s.be64();
  r.bw_peak = std::bit_cast<double>(s.be64());
  r.bw_avg = std::bit_cast<double>(s.be64());
  r.msg_rate_avg = std::bit_cast<double>(s.be64());
  return r;
}

// Plays one role of a captured conversation against a scripted peer that
// sends the other side's captured bytes and checks ours byte for byte.
void replay(const std::string& test, PerftestRole role) {
  const auto& capture = perftest_capture(test);
  const bool we_are_client = role == PerftestRole::kClient;
  Side mine, theirs;
  for (const auto& p : capture) (p.from_client == we_are_client ? mine : theirs).q.push_back(&p);

  Connected c = connect();
  TcpChannel& ours = we_are_client ? *c.client : *c.server;
  TcpChannel& peer = we_are_client ? *c.server : *c.client;

  std::vector<std::string> mismatches;
  std::thread scripted([&] {
    std::string error;
    for (const auto& p : capture) {
      if (p.from_client != we_are_client) {
        if (!peer.send(p.bytes.data(), p.bytes.size(), error)) {
          mismatches.push_back("frame " + std::to_string(p.frame) + ": " + error);
          return;
        }
        continue;
      }
      std::vector<uint8_t> got(p.bytes.size());
      if (!peer.recv(got.data(), got.size(), error)) {
        mismatches.push_back("frame " + std::to_string(p.frame) + ": " + error);
        return;
      }
      if (got != p.bytes) mismatches.push_back("frame " + std::to_string(p.frame) + ": bytes differ");
    }
  });

  PerftestSession s(ours, role);
  std::string error;
  bool ok = true;
  for (Step step : flow_of(test)) {
    switch (step) {
      case kVersions:
        mine.next(kPerftestVersionSize);
        theirs.next(kPerftestVersionSize);
        ok = s.exchange_versions(error);
        CHECK(s.peer_version() == "6.06");
        break;
      case kSysData: {
        PerftestSysData m{mine.be32(), mine.be32()}, want{theirs.be32(), theirs.be32()}, got;
        CHECK(m == PerftestSysData{4096, 64});
        ok = s.exchange_sys_data(m, got, error);
        CHECK(got == want);
        break;
      }
      case kMtu: {
        int m = mine.next(2)[0] - '0', got = 0;
        theirs.next(2);
        ok = s.exchange_mtu(m, got, error);
        CHECK(got == 3);  // IBV_MTU_1024: rxe on a 1500-byte netdev
        CHECK(PerftestSession::agree_mtu(m, got) == 3);
        break;
      }
      case kHandShake: {
        PerftestDest m = dest_of(mine.next(kPerftestRecordSize)), want = dest_of(theirs.next(kPerftestRecordSize));
        PerftestDest got;
        ok = s.hand_shake(m, got, error);
        CHECK(got == want);
        break;
      }
      case kBarrier:
        theirs.next(kPerftestRecordSize);
        ok = s.barrier(dest_of(mine.next(kPerftestRecordSize)), error);
        break;
      case kBwReports: {
        PerftestBwReport m = report_of(mine), want = report_of(theirs), got;
        ok = s.exchange_bw_reports(m, false, got, error);
        CHECK(std::memcmp(&got, &want, sizeof got) == 0);  // bitwise: the server's words are junk
        break;
      }
      case kClose: {
        PerftestDest m = dest_of(mine.next(kPerftestRecordSize));
        theirs.next(kPerftestRecordSize);
        CHECK(as_string(mine.next(5)) == std::string("done", 5));
        theirs.next(5);
        ok = s.close(m, error);
        break;
      }
    }
    INFO(error);
    REQUIRE(ok);
  }
  scripted.join();
  CHECK(mine.q.empty());
  CHECK(theirs.q.empty());
  for (const auto& m : mismatches) FAIL_CHECK(m);
  CHECK(mismatches.empty());
}

struct IdleCounter {
  std::atomic<long> calls{0};
  Idle fn() {
    return [this] {
      ++calls;
      std::this_thread::yield();
    };
  }
};

PerftestDest dest(uint32_t qpn, uint32_t psn, const char* ip) {
  PerftestDest d;
  d.out_reads = 0x10;
  d.qpn = qpn;
  d.psn = psn;
  d.rkey = 0x1234 + qpn;
  d.vaddr = 0x7f0000001000ull + qpn;
  REQUIRE(uroce::wire::IpAddr::parse(ip, d.gid));
  return d;
}

std::array<char, kPerftestVersionSize> version_field(const char* text) {
  std::array<char, kPerftestVersionSize> v{};
  std::memcpy(v.data(), text, std::min(std::strlen(text), v.size()));
  return v;
}

}  // namespace

TEST_CASE("replays of the captured perftest conversations, client side", "[perftest-replay]") {
  for (const char* test : {"write_bw", "read_bw", "send_bw", "atomic_bw", "write_lat", "read_lat"}) {
    DYNAMIC_SECTION(test) { replay(test, PerftestRole::kClient); }
  }
}

TEST_CASE("replays of the captured perftest conversations, server side", "[perftest-replay]") {
  for (const char* test : {"write_bw", "read_bw", "send_bw", "atomic_bw", "write_lat", "read_lat"}) {
    DYNAMIC_SECTION(test) { replay(test, PerftestRole::kServer); }
  }
}

TEST_CASE("a whole bw conversation between two sessions, engines kept polling", "[perftest-session]") {
  IdleCounter client_idle, server_idle;
  Connected c = connect(client_idle.fn(), server_idle.fn());
  const PerftestDest client_qp[2] = {dest(0x11, 0xabcdef, "10.0.0.1"), dest(0x12, 0x000001, "10.0.0.1")};
  const PerftestDest server_qp[2] = {dest(0x21, 0x123456, "10.0.0.2"), dest(0x22, 0xfffffe, "10.0.0.2")};
  PerftestBwReport client_report;
  client_report.size = 65536;
  client_report.iters = 5000;
  client_report.bw_peak = 11234.5;
  client_report.bw_avg = 11000.25;
  client_report.msg_rate_avg = 0.176;
  client_report.bw_avg_p1 = 1.5;
  client_report.msg_rate_avg_p2 = -2.0;

  struct Seen {
    std::string error, version;
    PerftestSysData sys;
    int mtu = 0;
    PerftestDest qp[2];
    PerftestBwReport report;
    bool ok = false;
  } server_seen, client_seen;

  std::thread server([&] {
    // Late on purpose, so the client has to wait (and poll) for every reply.
    std::this_thread::sleep_for(50ms);
    PerftestSession s(*c.server, PerftestRole::kServer);
    Seen& v = server_seen;
    v.ok = s.exchange_versions(v.error) && s.exchange_sys_data({8192, 64}, v.sys, v.error) &&
           s.exchange_mtu(5, v.mtu, v.error) && s.hand_shake(server_qp[0], v.qp[0], v.error) &&
           s.hand_shake(server_qp[1], v.qp[1], v.error) && s.barrier(server_qp[0], v.error) &&
           s.barrier(server_qp[0], v.error) && s.exchange_bw_reports({}, true, v.report, v.error) &&
           s.close(server_qp[0], v.error);
    v.version = s.peer_version();
  });
  PerftestSession s(*c.client, PerftestRole::kClient);
  Seen& v = client_seen;
  v.ok = s.exchange_versions(v.error) && s.exchange_sys_data({4096, 128}, v.sys, v.error) &&
         s.exchange_mtu(3, v.mtu, v.error) && s.hand_shake(client_qp[0], v.qp[0], v.error) &&
         s.hand_shake(client_qp[1], v.qp[1], v.error) && s.barrier(client_qp[0], v.error) &&
         s.barrier(client_qp[0], v.error) && s.exchange_bw_reports(client_report, true, v.report, v.error) &&
         s.close(client_qp[0], v.error);
  v.version = s.peer_version();
  server.join();

  INFO(client_seen.error << " / " << server_seen.error);
  REQUIRE(client_seen.ok);
  REQUIRE(server_seen.ok);
  CHECK(client_seen.version == "6.06");
  CHECK(server_seen.version == "6.06");
  CHECK(server_seen.sys == PerftestSysData{4096, 128});
  CHECK(client_seen.sys == PerftestSysData{8192, 64});
  CHECK(server_seen.mtu == 3);
  CHECK(client_seen.mtu == 5);
  CHECK(PerftestSession::agree_mtu(3, 5) == 3);
  CHECK(PerftestSession::agree_mtu(5, 3) == 3);
  CHECK(PerftestSession::agree_mtu(3, 7) == 3);  // invalid peer MTU: keep ours
  CHECK(server_seen.qp[0] == client_qp[0]);
  CHECK(server_seen.qp[1] == client_qp[1]);
  CHECK(client_seen.qp[0] == server_qp[0]);
  CHECK(client_seen.qp[1] == server_qp[1]);
  CHECK(server_seen.report == client_report);  // per-port fields too
  CHECK(client_seen.report == PerftestBwReport{});
  CHECK(client_idle.calls > 0);
  CHECK(server_idle.calls > 0);
}

TEST_CASE("perftest's version rule is enforced", "[perftest-session]") {
  Connected c = connect();
  std::string error, peer_error;
  std::array<char, kPerftestVersionSize> got{};

  SECTION("a client refuses a server older than 5.70") {
    std::thread fake([&] {
      auto v = version_field("5.60");
      c.server->recv(got.data(), got.size(), peer_error) && c.server->send(v.data(), v.size(), peer_error);
    });
    PerftestSession s(*c.client, PerftestRole::kClient);
    CHECK_FALSE(s.exchange_versions(error));
    fake.join();
    CHECK(error == "perftest exchange_versions: peer " + c.client->peer() +
                       " runs perftest version \"5.60\", older than 5.70, which perftest 6.06 refuses "
                       "(check_version_compatibility)");
    CHECK(std::string(got.data()) == "6.06");
    CHECK(std::all_of(got.begin() + 4, got.end(), [](char ch) { return ch == 0; }));  // NUL-padded
  }
  SECTION("a server refuses a client that is not a number, after answering") {
    std::thread fake([&] {
      auto v = version_field("dev");
      c.client->send(v.data(), v.size(), peer_error) && c.client->recv(got.data(), got.size(), peer_error);
    });
    PerftestSession s(*c.server, PerftestRole::kServer);
    CHECK_FALSE(s.exchange_versions(error));
    fake.join();
    CHECK_THAT(error, Catch::Contains("runs perftest version \"dev\", older than 5.70"));
    CHECK(std::string(got.data()) == "6.06");
  }
  SECTION("5.70 and later versions are accepted") {
    for (const char* version : {"5.70", "6.10", "25.01"}) {
      std::thread fake([&] {
        auto v = version_field(version);
        c.server->recv(got.data(), got.size(), peer_error) && c.server->send(v.data(), v.size(), peer_error);
      });
      PerftestSession s(*c.client, PerftestRole::kClient);
      bool ok = s.exchange_versions(error);
      fake.join();
      INFO(version << ": " << error);
      CHECK(ok);
      CHECK(s.peer_version() == version);
    }
  }
  SECTION("a version field without NUL is not perftest") {
    std::thread fake([&] {
      std::string v(kPerftestVersionSize, '6');
      c.server->recv(got.data(), got.size(), peer_error) && c.server->send(v.data(), v.size(), peer_error);
    });
    PerftestSession s(*c.client, PerftestRole::kClient);
    CHECK_FALSE(s.exchange_versions(error));
    fake.join();
    CHECK_THAT(error, Catch::Contains("has no NUL in its 16 bytes"));
  }
}

TEST_CASE("malformed fields and early closes fail the step that met them", "[perftest-session]") {
  Connected c = connect();
  std::string error, peer_error;
  PerftestSession s(*c.client, PerftestRole::kClient);

  SECTION("MTU field") {
    std::thread fake([&] {
      char in[2];
      c.server->recv(in, 2, peer_error) && c.server->send("x", 2, peer_error);
    });
    int mtu = 0;
    CHECK_FALSE(s.exchange_mtu(3, mtu, error));
    fake.join();
    CHECK(error == "perftest check_mtu: the MTU field from " + c.client->peer() + " is not one digit and a NUL");
  }
  SECTION("QP record") {
    std::thread fake([&] {
      char in[kPerftestRecordSize];
      std::string junk(kPerftestRecordSize, 'z');
      c.server->recv(in, sizeof in, peer_error) && c.server->send(junk.data(), junk.size(), peer_error);
    });
    PerftestDest peer;
    CHECK_FALSE(s.hand_shake(dest(1, 2, "10.0.0.1"), peer, error));
    fake.join();
    CHECK(error == "perftest ctx_hand_shake: from " + c.client->peer() +
                       ": perftest record byte 0: 'z' is not a hex digit (LID has 4)");
  }
  SECTION("peer gone in the middle of the bw reports") {
    std::thread fake([&] {
      char in[8];
      c.server->recv(in, 8, peer_error) && c.server->send(in, 8, peer_error) && c.server->recv(in, 8, peer_error);
      c.server.reset();
    });
    PerftestBwReport peer;
    CHECK_FALSE(s.exchange_bw_reports({}, false, peer, error));
    fake.join();
    CHECK(error == "perftest xchg_bw_reports (iters): peer " + c.client->peer() +
                       " closed the connection while 8 bytes were expected");
  }
  SECTION("close accepts a peer that hangs up instead of saying done") {
    PerftestDest mine = dest(1, 2, "10.0.0.1");
    std::thread fake([&] {
      char in[kPerftestRecordSize];
      PerftestRecord r;
      encode_perftest_dest(dest(3, 4, "10.0.0.2"), r, peer_error);
      c.server->recv(in, sizeof in, peer_error) && c.server->send(r.data(), r.size(), peer_error);
      c.server->recv(in, 5, peer_error);
      c.server.reset();
    });
    bool ok = s.close(mine, error);
    fake.join();
    INFO(error);
    CHECK(ok);
  }
  SECTION("close refuses a stranger's trailer") {
    std::thread fake([&] {
      char in[kPerftestRecordSize];
      PerftestRecord r;
      encode_perftest_dest(dest(3, 4, "10.0.0.2"), r, peer_error);
      c.server->recv(in, sizeof in, peer_error) && c.server->send(r.data(), r.size(), peer_error) &&
          c.server->send("DONE", 5, peer_error);
    });
    CHECK_FALSE(s.close(dest(1, 2, "10.0.0.1"), error));
    fake.join();
    CHECK(error == "perftest ctx_close_connection: expected \"done\\0\" from " + c.client->peer() +
                       ", got other bytes");
  }
}
