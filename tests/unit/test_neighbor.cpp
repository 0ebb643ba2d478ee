// SPDX-License-Identifier: BSD-3-Clause
// ARP and Neighbor Discovery frames against frames the Linux kernel sent
// (tests/data/neighbor, see PROVENANCE.md): uroce must read what Linux
// writes and write, byte for byte, what Linux would.
#include <catch2/catch.hpp>

#include <vector>

#include "uroce/capture/pcap_file.h"
#include "wire/neighbor.h"

using namespace uroce;
using namespace uroce::wire;

namespace {

std::vector<std::vector<uint8_t>> linux_frames() {
  std::string error;
  auto r = capture::PcapReader::open(std::string(UROCE_TEST_DATA) + "/neighbor/linux_nd_arp.pcap", error);
  REQUIRE(r);
  std::vector<std::vector<uint8_t>> out;
  capture::CapturedFrame f;
  while (r->next(f)) out.emplace_back(f.bytes.begin(), f.bytes.end());
  REQUIRE(out.size() == 4);
  return out;
}

IpAddr ip(const char* text) {
  IpAddr a;
  REQUIRE(IpAddr::parse(text, a));
  return a;
}

MacAddr mac(const char* text) {
  MacAddr m;
  REQUIRE(MacAddr::parse(text, m));
  return m;
}

// Our frames are padded to the Ethernet minimum; Linux leaves that to the
// NIC (the capture shows 42-byte ARP frames).
void require_same(const std::vector<uint8_t>& linux_frame, const uint8_t* ours, size_t len) {
  REQUIRE(len == std::max<size_t>(linux_frame.size(), 60));
  CHECK(std::vector<uint8_t>(ours, ours + linux_frame.size()) == linux_frame);
  for (size_t i = linux_frame.size(); i < len; ++i) CHECK(ours[i] == 0);
}

}  // namespace

TEST_CASE("Linux's neighbor solicitation parses and uroce's advert matches Linux's", "[neighbor]") {
  const auto frames = linux_frames();
  NeighborMsg ns;
  REQUIRE(parse_neighbor(frames[0].data(), frames[0].size(), ns));
  CHECK(ns.kind == NeighborMsg::Kind::nd_solicit);
  CHECK(ns.target == ip("fd00:77::2"));
  CHECK(ns.sender_ip == ip("fd00:77::1"));
  REQUIRE(ns.has_sender_mac);
  CHECK(ns.sender_mac == mac("02:00:00:aa:00:01"));

  uint8_t buf[kNeighborFrameMax];
  require_same(frames[1], buf, build_nd_advert(buf, mac("02:00:00:bb:00:02"), ip("fd00:77::2"), ns));
  require_same(frames[0], buf, build_nd_solicit(buf, mac("02:00:00:aa:00:01"), ip("fd00:77::1"), ip("fd00:77::2")));

  NeighborMsg na;
  REQUIRE(parse_neighbor(frames[1].data(), frames[1].size(), na));
  CHECK(na.kind == NeighborMsg::Kind::nd_advert);
  CHECK(na.sender_ip == ip("fd00:77::2"));
  CHECK(na.sender_mac == mac("02:00:00:bb:00:02"));
}

TEST_CASE("Linux's ARP request parses and uroce's ARP frames match Linux's", "[neighbor]") {
  const auto frames = linux_frames();
  NeighborMsg req;
  REQUIRE(parse_neighbor(frames[2].data(), frames[2].size(), req));
  CHECK(req.kind == NeighborMsg::Kind::arp_request);
  CHECK(req.sender_ip == ip("10.77.0.1"));
  CHECK(req.sender_mac == mac("02:00:00:aa:00:01"));
  CHECK(req.target == ip("10.77.0.2"));

  uint8_t buf[kNeighborFrameMax];
  require_same(frames[3], buf, build_arp_reply(buf, mac("02:00:00:bb:00:02"), ip("10.77.0.2"), req));
  require_same(frames[2], buf, build_arp_request(buf, mac("02:00:00:aa:00:01"), ip("10.77.0.1"), ip("10.77.0.2")));

  NeighborMsg rep;
  REQUIRE(parse_neighbor(frames[3].data(), frames[3].size(), rep));
  CHECK(rep.kind == NeighborMsg::Kind::arp_reply);
  CHECK(rep.sender_mac == mac("02:00:00:bb:00:02"));
}

TEST_CASE("Malformed neighbor frames are refused", "[neighbor]") {
  const auto frames = linux_frames();
  NeighborMsg m;
  for (const auto& f : frames)
    for (size_t len = 0; len < f.size(); ++len) CHECK_FALSE(parse_neighbor(f.data(), len, m));  // every truncation
  auto bad_hop = frames[0];
  bad_hop[14 + 7] = 64;  // ND must arrive with hop limit 255 (RFC 4861 7.1.1)
  CHECK_FALSE(parse_neighbor(bad_hop.data(), bad_hop.size(), m));
  auto bad_sum = frames[1];
  bad_sum[14 + 40 + 8] ^= 1;  // target address changed under the checksum
  CHECK_FALSE(parse_neighbor(bad_sum.data(), bad_sum.size(), m));
  auto zero_opt = frames[0];
  zero_opt[14 + 40 + 25] = 0;  // option length 0 (RFC 4861 4.6)
  zero_opt[14 + 40 + 2] = zero_opt[14 + 40 + 3] = 0;
  CHECK_FALSE(parse_neighbor(zero_opt.data(), zero_opt.size(), m));
  auto arp_op = frames[2];
  arp_op[14 + 7] = 9;
  CHECK_FALSE(parse_neighbor(arp_op.data(), arp_op.size(), m));
}

TEST_CASE("Linux's frames with an 802.1Q tag put in parse as the untagged ones", "[neighbor]") {
  // A tag after the MACs, as a VLAN interface sends them (VLAN 100, PCP 3):
  // the same message, and an ND solicitation without a source option is
  // still answered at the frame's source MAC.
  for (const auto& f : linux_frames()) {
    std::vector<uint8_t> tagged(f.begin(), f.begin() + 12);
    tagged.insert(tagged.end(), {0x81, 0x00, 0x60, 0x64});
    tagged.insert(tagged.end(), f.begin() + 12, f.end());
    NeighborMsg plain, got;
    REQUIRE(parse_neighbor(f.data(), f.size(), plain));
    REQUIRE(parse_neighbor(tagged.data(), tagged.size(), got));
    CHECK(got.kind == plain.kind);
    CHECK(got.sender_ip == plain.sender_ip);
    CHECK(got.sender_mac == plain.sender_mac);
    CHECK(got.target == plain.target);
    CHECK(got.reply_mac == plain.reply_mac);
    CHECK(got.reply_ip == plain.reply_ip);
    for (size_t len = 0; len < tagged.size(); ++len) CHECK_FALSE(parse_neighbor(tagged.data(), len, got));
  }
}
