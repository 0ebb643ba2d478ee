// SPDX-License-Identifier: BSD-3-Clause
// ibv_srq_pingpong's exchange over real TCP (127.0.0.1): 256 records each
// way, then "done". The other side is a plain socket replaying what
// rdma-core's srq_pingpong sent in the rxe capture (-q 2), and what our
// side sends must be exactly rdma-core's bytes.
#include <catch2/catch.hpp>

#include <atomic>
#include <future>
#include <string>
#include <vector>

#include "pingpong_data.h"
#include "raw_socket.h"
#include "uroce/exchange/pingpong.h"
#include "uroce/exchange/tcp_channel.h"

namespace uroce::exchange {
namespace {

using test::RawSocket;
constexpr int kWaitMs = 5000;
const Millis kTimeout{5000};
constexpr size_t kAll = kSrqPingpongRecords * kPingpongRecordSize;  // 13312
const std::string kDone(kPingpongDone, sizeof kPingpongDone);

// The first `n` records of a captured stream.
std::vector<PingpongDest> records(const std::string& stream, size_t n) {
  std::vector<PingpongDest> out(n);
  for (size_t i = 0; i < n; ++i) {
    std::string error;
    if (!decode_pingpong(stream.data() + i * kPingpongRecordSize, kPingpongRecordSize, out[i], error)) FAIL(error);
  }
  return out;
}

}  // namespace

TEST_CASE("srq client conversation sends exactly what srq_pingpong's client sent", "[pingpong-conversation]") {
  const std::string client_bytes = test::read_stream("srq_pingpong", "client");
  const std::string server_bytes = test::read_stream("srq_pingpong", "server");
  REQUIRE(client_bytes.size() == kAll + kDone.size());
  REQUIRE(server_bytes.size() == kAll);
  RawSocket listener = RawSocket::listen_loopback();
  REQUIRE(listener.ok());
  auto server = std::async(std::launch::async, [&] {
    RawSocket s = listener.accept(kWaitMs);
    if (!s.ok()) return std::string("<no connection>");
    std::string got = s.read(kAll, kWaitMs);
    if (got.size() != kAll || !s.write_all(server_bytes)) return got;
    return got + s.read(kDone.size(), kWaitMs);
  });
  std::string error;
  auto ch = TcpChannel::connect("127.0.0.1", listener.port(), kTimeout, [] {}, error);
  REQUIRE(ch);
  std::vector<PingpongDest> remote;
  const bool ok = srq_pingpong_client_exchange(*ch, records(client_bytes, 2), remote, error);
  const std::string sent = server.get();
  INFO(error);
  REQUIRE(ok);
  CHECK(sent == client_bytes);  // 2 records, 254 zero records, "done\0"
  REQUIRE(remote.size() == kSrqPingpongRecords);
  CHECK(remote[0].qpn == 0x11);
  CHECK(remote[0].psn == 0xde6a98);
  CHECK(remote[1].qpn == 0x12);
  CHECK(remote[1].psn == 0xd5cfd9);
  CHECK(remote[2] == PingpongDest{});
  CHECK(remote[255] == PingpongDest{});
}

TEST_CASE("srq server conversation: 256 records in, connect, 256 out, done", "[pingpong-conversation]") {
  const std::string client_bytes = test::read_stream("srq_pingpong", "client");
  const std::string server_bytes = test::read_stream("srq_pingpong", "server");
  const uint16_t port = RawSocket::free_port();
  REQUIRE(port != 0);
  std::atomic<bool> client_got_reply{false};
  bool reply_before_connect = false;
  std::vector<PingpongDest> seen;
  const PingpongConnectAll connect = [&](const std::vector<PingpongDest>& r, std::string&) {
    seen = r;
    reply_before_connect = client_got_reply.load();
    return true;
  };
  auto peer = std::async(std::launch::async, [&] {
    RawSocket c = RawSocket::connect_loopback(port, kWaitMs);
    // The client's records arrive in pieces, as TCP segments do.
    const std::string records = client_bytes.substr(0, kAll);
    for (size_t at = 0; at < records.size(); at += 1448)
      if (!c.ok() || !c.write_all(records.substr(at, 1448))) return std::string("<no connection>");
    std::string got = c.read(kAll, kWaitMs);
    client_got_reply = true;
    c.write_all(kDone);
    return got;
  });
  std::string error;
  auto ch = TcpChannel::accept(port, kTimeout, [] {}, error);
  REQUIRE(ch);
  std::vector<PingpongDest> remote;
  const bool ok = srq_pingpong_server_exchange(*ch, records(server_bytes, 2), connect, remote, error);
  ch.reset();
  const std::string reply = peer.get();
  INFO(error);
  REQUIRE(ok);
  CHECK(reply == server_bytes);
  CHECK_FALSE(reply_before_connect);
  REQUIRE(seen.size() == kSrqPingpongRecords);
  CHECK(seen[0] == records(client_bytes, 2)[0]);
  CHECK(seen[1] == records(client_bytes, 2)[1]);
  CHECK(seen[2].qpn == 0);
  CHECK(remote == seen);
}

TEST_CASE("srq conversation failures", "[pingpong-conversation]") {
  const std::string client_bytes = test::read_stream("srq_pingpong", "client");
  const std::vector<PingpongDest> mine = records(test::read_stream("srq_pingpong", "server"), 2);
  const uint16_t port = RawSocket::free_port();
  REQUIRE(port != 0);
  std::string error;
  std::vector<PingpongDest> remote;

  SECTION("a client that sends one record only (rc_pingpong) is not enough") {
    int connects = 0;
    auto peer = std::async(std::launch::async, [&] {
      RawSocket c = RawSocket::connect_loopback(port, kWaitMs);
      c.write_all(client_bytes.substr(0, kPingpongRecordSize));
      c.write_all(kDone);  // what rc_pingpong's client sends next
      return true;           // and then it waits for one record: we hang up
    });
    auto ch = TcpChannel::accept(port, kTimeout, [] {}, error);
    REQUIRE(ch);
    CHECK_FALSE(srq_pingpong_server_exchange(
        *ch, mine, [&](const std::vector<PingpongDest>&, std::string&) { return ++connects, true; }, remote, error));
    ch.reset();
    CHECK(peer.get());
    CHECK(connects == 0);
    CHECK_THAT(error, Catch::Contains("couldn't read remote address 1 of 256 from 127.0.0.1:"));
  }
  SECTION("a failing connect aborts without replying") {
    auto peer = std::async(std::launch::async, [&] {
      RawSocket c = RawSocket::connect_loopback(port, kWaitMs);
      c.write_all(client_bytes.substr(0, kAll));
      return c.closed_by_peer(kWaitMs);
    });
    auto ch = TcpChannel::accept(port, kTimeout, [] {}, error);
    REQUIRE(ch);
    CHECK_FALSE(srq_pingpong_server_exchange(
        *ch, mine,
        [](const std::vector<PingpongDest>&, std::string& e) { return e = "QP[1] to RTR: Invalid argument", false; },
        remote, error));
    ch.reset();
    CHECK(peer.get());
    CHECK_THAT(error, Catch::Contains("couldn't connect to the remote QPs: QP[1] to RTR: Invalid argument"));
  }
  SECTION("more QPs than srq_pingpong's MAX_QP: nothing is sent") {
    std::vector<PingpongDest> too_many(kSrqPingpongRecords + 1, mine[0]);
    RawSocket listener = RawSocket::listen_loopback();
    auto server = std::async(std::launch::async, [&] { return listener.accept(kWaitMs).closed_by_peer(kWaitMs); });
    auto ch = TcpChannel::connect("127.0.0.1", listener.port(), kTimeout, [] {}, error);
    REQUIRE(ch);
    CHECK_FALSE(srq_pingpong_client_exchange(*ch, too_many, remote, error));
    ch.reset();
    CHECK(server.get());
    CHECK_THAT(error, Catch::Contains("257 QPs: srq_pingpong exchanges at most 256"));
  }
}

}  // namespace uroce::exchange
