// SPDX-License-Identifier: BSD-3-Clause
// uroce-dump: decode and verify every RoCEv2 packet of a pcap file.
//
// Exit status: 0 when every RoCEv2 packet is valid (also when there are
// none), 1 when at least one is not, 2 on a usage or file error.
#include <cstdio>
#include <string>

#include <CLI/CLI.hpp>

#include "dump.h"
#include "uroce/capture/pcap_file.h"

namespace {

using namespace uroce;

constexpr int kAllValid = 0;
constexpr int kSomeInvalid = 1;
constexpr int kUsageError = 2;
constexpr int kDltEn10mb = 1;  // libpcap's DLT_EN10MB: Ethernet

struct Options {
  std::string file;
  bool json = false;
  bool all = false;
  uint32_t pmtu = 0;
};

constexpr const char* kFooter = R"(
Each line shows: frame number, IP source:UDP source port -> IP destination,
opcode, destination QP, PSN, BTH flags (SE, MigReq, AckReq, FECN, BECN), pad
count, the extension headers (DETH, RETH, AtomicETH, AETH with its syndrome
decoded as ACK / RNR_NAK / NAK code, AtomicAckETH, ImmDt, IETH), payload
length, whether the ICRC matches, and "valid" or "INVALID <code>: <reason>".
A summary follows: frames read, RoCEv2 packets, valid, invalid, the count of
each error, and other (non-RoCEv2) frames.

Checks: every length, the IPv4 header checksum, a non-zero UDP checksum,
BTH TVer and opcode, pad count, the ICRC, and the opcode rules (RETH DMA
length, atomic alignment, AETH syndrome, no pad before the last packet).

--json prints one object per line: {"type":"packet"} with frame, verdict
("valid"/"invalid"), error (code or null), reason, eth, ip, udp, bth, ext,
payload_len and icrc {wire, computed, ok} (CRC-32 values, the wire bytes read
little-endian); {"type":"other"} for non-RoCEv2 frames with --all; and a
final {"type":"summary"}. 64-bit fields are "0x..." strings.

Only classic pcap or pcapng files with Ethernet (DLT_EN10MB) frames are read.

Exit status: 0 every RoCEv2 packet is valid (or there is none),
             1 at least one is invalid,
             2 usage or file error.
)";

void define_options(CLI::App& app, Options& o) {
  app.add_option("FILE", o.file, "Capture file (pcap or pcapng, Ethernet link type)")->required();
  app.add_flag("--json", o.json, "Print JSON lines instead of text");
  app.add_flag("--all", o.all, "Also list frames that are not RoCEv2 (ARP, TCP, other UDP ports)");
  app.add_option("--pmtu", o.pmtu,
                 "Enforce this path MTU (IB MTU: 256, 512, 1024, 2048 or 4096): FIRST/MIDDLE payloads must "
                 "equal it, LAST/ONLY payloads may not exceed it. Default: no MTU check")
      ->check(CLI::IsMember({256u, 512u, 1024u, 2048u, 4096u}));
  app.set_version_flag("--version", std::string("uroce-dump ") + UROCE_VERSION);
  app.footer(kFooter);
}

int run(const Options& o) {
  std::string error;
  auto reader = capture::PcapReader::open(o.file, error);
  if (!reader) {
    std::fprintf(stderr, "uroce-dump: cannot read %s\n", error.c_str());
    return kUsageError;
  }
  if (reader->link_type() != kDltEn10mb) {
    std::fprintf(stderr, "uroce-dump: %s: unsupported link type %d; only Ethernet (DLT_EN10MB) is supported\n",
                 o.file.c_str(), reader->link_type());
    return kUsageError;
  }
  auto out = o.json ? dump::make_json_formatter() : dump::make_text_formatter();
  dump::Summary summary;
  summary.file = o.file;
  summary.pmtu = o.pmtu;
  capture::CapturedFrame frame;
  while (reader->next(frame)) {
    dump::Record r = dump::examine(summary.frames + 1, frame.bytes, o.pmtu);
    summary.add(r);
    if (r.roce)
      out->packet(r);
    else if (o.all)
      out->other(r);
  }
  out->summary(summary);
  std::fflush(stdout);
  if (!reader->error().empty()) {
    std::fprintf(stderr, "uroce-dump: %s: read error after frame %llu: %s\n", o.file.c_str(),
                 static_cast<unsigned long long>(summary.frames), reader->error().c_str());
    return kUsageError;
  }
  return summary.invalid == 0 ? kAllValid : kSomeInvalid;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Decode every RoCEv2 (UDP port 4791) packet of a capture and verify it, ICRC included.",
               "uroce-dump"};
  Options options;
  define_options(app, options);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version end here too, with exit code 0.
    return app.exit(e) == 0 ? 0 : kUsageError;
  }
  return run(options);
}
