// SPDX-License-Identifier: BSD-3-Clause
#include "dump.h"

namespace uroce::dump {
namespace {

using wire::ParseError;

// The parser judges a short frame "truncated" before it looks at the
// protocol or port; a capture cut by its snap length must not turn a TCP
// or ARP frame into an invalid RoCE packet, so look at what was captured.
bool shows_other_protocol(const Layers& L) {
  if (L.ethertype == 0) return false;
  if (L.ethertype != wire::kEtherTypeIpv4 && L.ethertype != wire::kEtherTypeIpv6) return true;
  if (L.l3 != 0 && L.proto != wire::kIpProtoUdp) return true;
  return L.l4 != 0 && L.dport != wire::kRoceV2Port;
}

}  // namespace

Record examine(uint64_t frame, std::span<const uint8_t> bytes, uint32_t pmtu) {
  Record r;
  r.frame = frame;
  r.bytes = bytes;
  r.layers = locate_layers(bytes);
  wire::ParseOptions opts;
  opts.verify_udp_checksum = true;  // a tool can afford the extra pass
  r.error = wire::parse_frame(bytes, r.view, opts);
  r.roce = r.error != ParseError::not_roce &&
           !(r.error == ParseError::truncated && shows_other_protocol(r.layers));
  // These are found after every header was parsed (parse_frame checks them last).
  r.parsed = r.error == ParseError::ok || r.error == ParseError::udp_checksum || r.error == ParseError::icrc;
  r.icrc_checked = r.error == ParseError::ok || r.error == ParseError::icrc;
  if (r.error == ParseError::ok) r.error = wire::check_semantics(r.view, pmtu);
  return r;
}

}  // namespace uroce::dump
