// SPDX-License-Identifier: BSD-3-Clause
// The two pingpong conversations over real TCP (127.0.0.1): the other side
// is a plain socket replaying what rdma-core's rc_pingpong sent in the rxe
// capture, and the bytes our side sends must be exactly rdma-core's.
#include <catch2/catch.hpp>

#include <atomic>
#include <future>
#include <string>

#include "pingpong_data.h"
#include "raw_socket.h"
#include "uroce/exchange/pingpong.h"
#include "uroce/exchange/tcp_channel.h"

namespace uroce::exchange {
namespace {

using test::RawSocket;
constexpr int kWaitMs = 5000;
const Millis kTimeout{5000};

PingpongDest decoded(const std::string& stream, size_t offset = 0) {
  PingpongDest d;
  std::string error;
  if (!decode_pingpong(stream.data() + offset, kPingpongRecordSize, d, error)) FAIL(error);
  return d;
}

std::string record(const std::string& stream) { return stream.substr(0, kPingpongRecordSize); }
const std::string kDone(kPingpongDone, sizeof kPingpongDone);

std::unique_ptr<TcpChannel> connect_to(uint16_t port) {
  std::string error;
  auto ch = TcpChannel::connect("127.0.0.1", port, kTimeout, [] {}, error);
  INFO(error);
  REQUIRE(ch);
  return ch;
}

// Runs the server conversation on `port` in this thread while `client`
// plays the other side in another; returns what the client collected.
template <class Client>
std::string serve(uint16_t port, const PingpongDest& mine, const PingpongConnect& connect, Client client,
                  bool& ok, PingpongDest& remote, std::string& error) {
  auto peer = std::async(std::launch::async, client);
  auto ch = TcpChannel::accept(port, kTimeout, [] {}, error);
  ok = ch && pingpong_server_exchange(*ch, mine, connect, remote, error);
  ch.reset();  // closes the connection: a client waiting for more sees EOF
  return peer.get();
}

}  // namespace

TEST_CASE("client conversation sends exactly what rc_pingpong's client sent", "[pingpong-conversation]") {
  for (const char* name : {"rc_pingpong", "rc_pingpong_small", "ud_pingpong"}) {
    INFO(name);
    const std::string client_bytes = test::read_stream(name, "client");
    const std::string server_bytes = test::read_stream(name, "server");
    RawSocket listener = RawSocket::listen_loopback();
    REQUIRE(listener.ok());
    // The scripted server: read the client's record, answer with the
    // captured one, read "done".
    auto server = std::async(std::launch::async, [&] {
      RawSocket s = listener.accept(kWaitMs);
      if (!s.ok()) return std::string("<no connection>");
      std::string got = s.read(kPingpongRecordSize, kWaitMs);
      if (got.size() != kPingpongRecordSize || !s.write_all(server_bytes)) return got;
      return got + s.read(sizeof kPingpongDone, kWaitMs);
    });
    auto ch = connect_to(listener.port());
    PingpongDest remote;
    std::string error;
    const bool ok = pingpong_client_exchange(*ch, decoded(client_bytes), remote, error);
    const std::string sent = server.get();
    INFO(error);
    REQUIRE(ok);
    CHECK(sent == client_bytes);  // record + "done\0", byte for byte
    CHECK(remote == decoded(server_bytes));
  }
}

TEST_CASE("server conversation: read, connect, reply, read done", "[pingpong-conversation]") {
  // ud_pingpong's server speaks the same conversation as rc_pingpong's.
  const char* name = GENERATE("rc_pingpong", "ud_pingpong");
  INFO(name);
  const std::string client_bytes = test::read_stream(name, "client");
  const std::string server_bytes = test::read_stream(name, "server");
  const uint16_t port = RawSocket::free_port();
  REQUIRE(port != 0);
  std::atomic<bool> client_got_reply{false};
  int connects = 0;
  bool reply_before_connect = false;
  PingpongDest seen_by_connect;
  const PingpongConnect connect = [&](const PingpongDest& remote, std::string&) {
    ++connects;
    seen_by_connect = remote;
    reply_before_connect = client_got_reply.load();
    return true;
  };
  bool ok = false;
  PingpongDest remote;
  std::string error;
  const std::string reply = serve(
      port, decoded(server_bytes), connect,
      [&] {
        RawSocket c = RawSocket::connect_loopback(port, kWaitMs);
        if (!c.ok() || !c.write_all(record(client_bytes))) return std::string("<no connection>");
        std::string got = c.read(kPingpongRecordSize, kWaitMs);
        client_got_reply = true;
        c.write_all(kDone);
        return got;
      },
      ok, remote, error);
  INFO(error);
  REQUIRE(ok);
  CHECK(reply == server_bytes);  // exactly rdma-core's server record
  CHECK(connects == 1);
  CHECK_FALSE(reply_before_connect);  // the QP is connected before the client can send
  CHECK(seen_by_connect == decoded(client_bytes));
  CHECK(remote == decoded(client_bytes));
}

TEST_CASE("server conversation failures", "[pingpong-conversation]") {
  const std::string client_bytes = test::read_stream("rc_pingpong", "client");
  const PingpongDest mine = decoded(test::read_stream("rc_pingpong", "server"));
  const uint16_t port = RawSocket::free_port();
  REQUIRE(port != 0);
  bool ok = true;
  PingpongDest remote;
  std::string error;

  SECTION("a failing connect aborts without replying") {
    const PingpongConnect refuse = [](const PingpongDest&, std::string& e) {
      e = "modify QP to RTR: Invalid argument";
      return false;
    };
    const std::string reply = serve(
        port, mine, refuse,
        [&] {
          RawSocket c = RawSocket::connect_loopback(port, kWaitMs);
          if (!c.ok() || !c.write_all(record(client_bytes))) return std::string("<no connection>");
          return c.closed_by_peer(kWaitMs) ? std::string("<closed>") : c.read(kPingpongRecordSize, 100);
        },
        ok, remote, error);
    CHECK_FALSE(ok);
    CHECK(reply == "<closed>");
    CHECK_THAT(error, Catch::Contains("couldn't connect to the remote QP: modify QP to RTR: Invalid argument"));
  }
  SECTION("a peer that is not rc_pingpong (perftest's version string)") {
    std::string perftest = "6.06";
    perftest.resize(kPingpongRecordSize, '\0');
    int connects = 0;
    serve(
        port, mine, [&](const PingpongDest&, std::string&) { return ++connects, true; },
        [&] {
          RawSocket c = RawSocket::connect_loopback(port, kWaitMs);
          c.write_all(perftest);
          return c.closed_by_peer(kWaitMs) ? std::string("<closed>") : std::string("<open>");
        },
        ok, remote, error);
    CHECK_FALSE(ok);
    CHECK(connects == 0);
    CHECK_THAT(error, Catch::Contains("remote address from 127.0.0.1:"));
    CHECK_THAT(error, Catch::Contains("malformed pingpong record"));
  }
  SECTION("the client closes halfway through its record") {
    serve(
        port, mine, [](const PingpongDest&, std::string&) { return true; },
        [&] {
          RawSocket c = RawSocket::connect_loopback(port, kWaitMs);
          c.write_all(client_bytes.substr(0, 20));
          return std::string();  // closes
        },
        ok, remote, error);
    CHECK_FALSE(ok);
    CHECK_THAT(error, Catch::Contains("couldn't read the remote address from 127.0.0.1:"));
  }
  SECTION("something other than done\\0 at the end") {
    serve(
        port, mine, [](const PingpongDest&, std::string&) { return true; },
        [&] {
          RawSocket c = RawSocket::connect_loopback(port, kWaitMs);
          c.write_all(record(client_bytes));
          c.read(kPingpongRecordSize, kWaitMs);
          c.write_all(std::string("DONE", 5));
          return std::string();
        },
        ok, remote, error);
    CHECK_FALSE(ok);
    CHECK_THAT(error, Catch::Contains("expected \"done\\0\""));
    CHECK_THAT(error, Catch::Contains("'D' 'O' 'N' 'E' 0x00"));
  }
}

TEST_CASE("client conversation failures", "[pingpong-conversation]") {
  const std::string client_bytes = test::read_stream("rc_pingpong", "client");
  const PingpongDest mine = decoded(client_bytes);
  RawSocket listener = RawSocket::listen_loopback();
  REQUIRE(listener.ok());
  PingpongDest remote;
  std::string error;

  SECTION("the server closes instead of replying") {
    auto server = std::async(std::launch::async, [&] {
      RawSocket s = listener.accept(kWaitMs);
      return s.read(kPingpongRecordSize, kWaitMs);
    });
    auto ch = connect_to(listener.port());
    CHECK_FALSE(pingpong_client_exchange(*ch, mine, remote, error));
    CHECK(server.get() == record(client_bytes));
    CHECK_THAT(error, Catch::Contains("couldn't read the remote address from 127.0.0.1:"));
  }
  SECTION("the server's record is malformed: no done is sent") {
    auto server = std::async(std::launch::async, [&] {
      RawSocket s = listener.accept(kWaitMs);
      std::string got = s.read(kPingpongRecordSize, kWaitMs);
      std::string bad = test::read_stream("rc_pingpong", "server");
      bad[11] = '-';
      s.write_all(bad);
      return got + s.read(sizeof kPingpongDone, 300);
    });
    auto ch = connect_to(listener.port());
    CHECK_FALSE(pingpong_client_exchange(*ch, mine, remote, error));
    ch.reset();
    CHECK(server.get() == record(client_bytes));
    CHECK_THAT(error, Catch::Contains("byte 11 is '-', expected ':' after the QPN"));
  }
  SECTION("the local record does not fit: nothing is sent") {
    PingpongDest too_big = mine;
    too_big.psn = 0x1000000;
    auto server = std::async(std::launch::async, [&] {
      RawSocket s = listener.accept(kWaitMs);
      return s.closed_by_peer(kWaitMs);
    });
    auto ch = connect_to(listener.port());
    CHECK_FALSE(pingpong_client_exchange(*ch, too_big, remote, error));
    ch.reset();
    CHECK(server.get());
    CHECK_THAT(error, Catch::Contains("local address: PSN"));
  }
}

}  // namespace uroce::exchange
