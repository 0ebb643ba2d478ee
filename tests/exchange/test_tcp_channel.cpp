// SPDX-License-Identifier: BSD-3-Clause
// TcpChannel / TcpListener over real localhost TCP, on kernel-chosen ports.
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstring>
#include <fstream>
#include <thread>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "uroce/exchange/tcp_channel.h"

using namespace uroce::exchange;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

namespace {

// Counts calls and yields, so two busy-polling threads share the cores.
struct IdleCounter {
  std::atomic<long> calls{0};
  Idle fn() {
    return [this] {
      ++calls;
      std::this_thread::yield();
    };
  }
};

std::unique_ptr<TcpListener> listen_any() {
  std::string error;
  auto l = TcpListener::listen(0, error);
  INFO(error);
  REQUIRE(l);
  REQUIRE(l->port() != 0);
  return l;
}

// A port nobody listens on: bound by the kernel, then released.
uint16_t free_port() { return listen_any()->port(); }

struct Pair {
  std::unique_ptr<TcpChannel> client, server;
  uint16_t port = 0;
};

Pair connect_pair(const std::string& host = "127.0.0.1") {
  auto l = listen_any();
  Pair p;
  p.port = l->port();
  std::string server_error;
  std::thread t([&] { p.server = l->accept(5000ms, nullptr, server_error); });
  std::string error;
  p.client = TcpChannel::connect(host, l->port(), 5000ms, nullptr, error);
  t.join();
  INFO(error << " / " << server_error);
  REQUIRE(p.client);
  REQUIRE(p.server);
  return p;
}

bool has_ipv6_loopback() {
  std::ifstream in("/proc/net/if_inet6");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("00000000000000000000000000000001", 0) == 0) return true;
  return false;
}

}  // namespace

TEST_CASE("bytes cross both ways over localhost, with peers named", "[tcp-channel]") {
  auto l = listen_any();
  IdleCounter server_idle, client_idle;
  std::unique_ptr<TcpChannel> server;
  std::string server_error;
  std::thread t([&] { server = l->accept(5000ms, server_idle.fn(), server_error); });
  // Let the server wait in accept() a while: it must poll, not block.
  std::this_thread::sleep_for(50ms);
  std::string error;
  auto client = TcpChannel::connect("127.0.0.1", l->port(), 5000ms, client_idle.fn(), error);
  t.join();
  INFO(error << " / " << server_error);
  REQUIRE(client);
  REQUIRE(server);
  CHECK(server_idle.calls > 0);
  CHECK(client->peer() == "127.0.0.1:" + std::to_string(l->port()));
  CHECK_THAT(server->peer(), Catch::StartsWith("127.0.0.1:"));  // IPv4-mapped shown as IPv4

  std::vector<uint8_t> big(1 << 20);
  for (size_t i = 0; i < big.size(); ++i) big[i] = uint8_t(i * 7);
  std::vector<uint8_t> got(big.size());
  bool server_ok = false;
  std::thread r([&] { server_ok = server->recv(got.data(), got.size(), server_error) &&
                                  server->send("pong", 5, server_error); });
  REQUIRE(client->send(big.data(), big.size(), error));
  char reply[5];
  long before = client_idle.calls;
  REQUIRE(client->recv(reply, sizeof reply, error));
  r.join();
  INFO(server_error);
  CHECK(server_ok);
  CHECK(got == big);
  CHECK(std::string(reply) == "pong");
  CHECK(client_idle.calls >= before);
}

TEST_CASE("the host may be a name or an IPv6 literal", "[tcp-channel]") {
  SECTION("localhost") {
    auto p = connect_pair("localhost");
    const std::string port = std::to_string(p.port);
    CHECK((p.client->peer() == "127.0.0.1:" + port || p.client->peer() == "[::1]:" + port));
    char c = 'x';
    std::string error;
    REQUIRE(p.client->send(&c, 1, error));
    REQUIRE(p.server->recv(&c, 1, error));
    CHECK(c == 'x');
  }
  SECTION("::1") {
    auto l = listen_any();
    std::unique_ptr<TcpChannel> server;
    std::string server_error, error;
    std::thread t([&] { server = l->accept(2000ms, nullptr, server_error); });
    auto client = TcpChannel::connect("::1", l->port(), 2000ms, nullptr, error);
    t.join();
    if (has_ipv6_loopback()) {
      INFO(error << " / " << server_error);
      REQUIRE(client);
      REQUIRE(server);
      CHECK(client->peer() == "[::1]:" + std::to_string(l->port()));
      CHECK_THAT(server->peer(), Catch::StartsWith("[::1]:"));
    } else {
      // No IPv6 on this host: the failure must still name the peer.
      CHECK_FALSE(client);
      CHECK_THAT(error, Catch::StartsWith("cannot connect to [::1]:" + std::to_string(l->port())));
    }
  }
}

TEST_CASE("connect retries a refused port until the server starts", "[tcp-channel]") {
  const uint16_t port = free_port();
  IdleCounter idle;
  std::unique_ptr<TcpChannel> server;
  std::string server_error;
  std::thread late([&] {
    std::this_thread::sleep_for(300ms);
    server = TcpChannel::accept(port, 5000ms, nullptr, server_error);
  });
  std::string error;
  auto t0 = Clock::now();
  auto client = TcpChannel::connect("127.0.0.1", port, 5000ms, idle.fn(), error);
  auto waited = Clock::now() - t0;
  late.join();
  INFO(error << " / " << server_error);
  REQUIRE(client);
  REQUIRE(server);
  CHECK(waited >= 250ms);
  CHECK(idle.calls > 0);  // the engine kept running while it retried
}

TEST_CASE("connect gives up after its timeout with the reason", "[tcp-channel]") {
  const uint16_t port = free_port();
  std::string error;
  SECTION("polling") {
    IdleCounter idle;
    auto t0 = Clock::now();
    CHECK_FALSE(TcpChannel::connect("127.0.0.1", port, 300ms, idle.fn(), error));
    auto waited = Clock::now() - t0;
    CHECK(error == "cannot connect to 127.0.0.1:" + std::to_string(port) + ": Connection refused (retried for 300 ms)");
    CHECK(waited >= 300ms);
    CHECK(waited < 3s);
    CHECK(idle.calls > 0);
  }
  SECTION("sleeping") {
    auto t0 = Clock::now();
    CHECK_FALSE(TcpChannel::connect("127.0.0.1", port, 1000ms, nullptr, error));
    CHECK(error == "cannot connect to 127.0.0.1:" + std::to_string(port) + ": Connection refused (retried for 1 s)");
    CHECK(Clock::now() - t0 >= 1000ms);
  }
  SECTION("unresolvable name") {
    CHECK_FALSE(TcpChannel::connect("no-such-host.invalid", port, 300ms, nullptr, error));
    CHECK_THAT(error, Catch::StartsWith("cannot resolve no-such-host.invalid: "));
  }
}

TEST_CASE("a silent peer makes recv time out, naming the wait", "[tcp-channel]") {
  auto p = connect_pair();
  std::string error;
  char buf[108];
  SECTION("polling") {
    IdleCounter idle;
    p.client->set_idle(idle.fn());
    p.client->set_timeout(200ms);
    auto t0 = Clock::now();
    CHECK_FALSE(p.client->recv(buf, sizeof buf, error));
    CHECK(Clock::now() - t0 >= 200ms);
    CHECK(error == "timed out after 200 ms waiting for 108 bytes from " + p.client->peer());
    CHECK(idle.calls > 0);
  }
  SECTION("sleeping, with part of the record received") {
    std::string e2;
    REQUIRE(p.server->send("0000:0001", 9, e2));
    p.client->set_timeout(200ms);
    CHECK_FALSE(p.client->recv(buf, sizeof buf, error));
    CHECK(error == "timed out after 200 ms waiting for 108 bytes from " + p.client->peer() + " (9 received)");
  }
}

TEST_CASE("a peer closing mid-record is reported as such", "[tcp-channel]") {
  auto p = connect_pair();
  std::string error;
  char part[40];
  std::memset(part, '0', sizeof part);
  REQUIRE(p.server->send(part, sizeof part, error));
  p.server.reset();
  char buf[108];
  CHECK_FALSE(p.client->recv(buf, sizeof buf, error));
  CHECK(error == "peer " + p.client->peer() + " closed the connection while 108 bytes were expected (40 received)");
}

TEST_CASE("recv_or_eof tells a clean close from a truncated message", "[tcp-channel]") {
  auto p = connect_pair();
  std::string error;
  char buf[5];
  bool eof = false;
  SECTION("closed before any byte") {
    p.server.reset();
    REQUIRE(p.client->recv_or_eof(buf, sizeof buf, eof, error));
    CHECK(eof);
    CHECK_FALSE(p.client->recv(buf, sizeof buf, error));
    CHECK(error == "peer " + p.client->peer() + " closed the connection while 5 bytes were expected");
  }
  SECTION("closed after two bytes") {
    REQUIRE(p.server->send("do", 2, error));
    p.server.reset();
    CHECK_FALSE(p.client->recv_or_eof(buf, sizeof buf, eof, error));
    CHECK(error == "peer " + p.client->peer() + " closed the connection while 5 bytes were expected (2 received)");
  }
  SECTION("the whole message") {
    REQUIRE(p.server->send("done", 5, error));
    REQUIRE(p.client->recv_or_eof(buf, sizeof buf, eof, error));
    CHECK_FALSE(eof);
    CHECK(std::string(buf) == "done");
  }
}

TEST_CASE("accept and listen failures are explained", "[tcp-channel]") {
  auto l = listen_any();
  std::string error;
  SECTION("nobody connects") {
    IdleCounter idle;
    auto t0 = Clock::now();
    CHECK_FALSE(l->accept(200ms, idle.fn(), error));
    CHECK(Clock::now() - t0 >= 200ms);
    CHECK(error == "no client connected to TCP port " + std::to_string(l->port()) + " within 200 ms");
    CHECK(idle.calls > 0);
  }
  SECTION("the port is taken") {
    CHECK_FALSE(TcpListener::listen(l->port(), error));
    CHECK(error == "cannot listen on TCP port " + std::to_string(l->port()) + ": Address already in use");
  }
  SECTION("the listener serves a second client") {
    for (int i = 0; i < 2; ++i) {
      std::unique_ptr<TcpChannel> server;
      std::string server_error;
      std::thread t([&] { server = l->accept(2000ms, nullptr, server_error); });
      auto client = TcpChannel::connect("127.0.0.1", l->port(), 2000ms, nullptr, error);
      t.join();
      CHECK(client);
      CHECK(server);
    }
  }
}

TEST_CASE("a closed listener refuses the next client; the channel it accepted stays", "[tcp-channel]") {
  auto l = listen_any();
  const uint16_t port = l->port();
  std::unique_ptr<TcpChannel> server;
  std::string server_error, error;
  std::thread t([&] { server = l->accept(5000ms, nullptr, server_error); });
  auto client = TcpChannel::connect("127.0.0.1", port, 5000ms, nullptr, error);
  t.join();
  INFO(error << " / " << server_error);
  REQUIRE(client);
  REQUIRE(server);
  l->close();
  // A raw connect: TcpChannel::connect would retry a refused port.
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  REQUIRE(fd >= 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const int rc = ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  const int err = errno;
  ::close(fd);
  CHECK(rc == -1);
  CHECK(err == ECONNREFUSED);
  REQUIRE(client->send("x", 1, error));
  char c = 0;
  REQUIRE(server->recv(&c, 1, server_error));
  CHECK(c == 'x');
  CHECK_FALSE(l->accept(100ms, nullptr, error));
}

TEST_CASE("linger returns once both sides are done, or at its timeout", "[tcp-channel]") {
  {
    Pair p = connect_pair();
    bool server_done = false;
    std::thread t([&] { server_done = p.server->linger(5000ms); });
    CHECK(p.client->linger(5000ms));
    t.join();
    CHECK(server_done);
  }
  {
    Pair p = connect_pair();
    // The server neither lingers nor closes: the client gives up.
    const auto t0 = std::chrono::steady_clock::now();
    CHECK_FALSE(p.client->linger(200ms));
    CHECK(std::chrono::steady_clock::now() - t0 >= 200ms);
    // Bytes still in flight are discarded, and a close counts as done.
    Pair q = connect_pair();
    std::string error;
    REQUIRE(q.server->send("late", 4, error));
    q.server.reset();
    CHECK(q.client->linger(5000ms));
  }
}
