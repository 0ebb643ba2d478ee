// SPDX-License-Identifier: BSD-3-Clause
// Reading and writing classic pcap files through libpcap: uroce-dump reads
// captures with it, tests write the frames the library builds, and the
// engine's capture option will write every frame it sends and receives.
#pragma once

#include "uroce/api.h"

#include <cstdint>
#include <memory>
#include <span>
#include <string>

struct pcap;
struct pcap_dumper;

namespace uroce::capture {

struct CapturedFrame {
  std::span<const uint8_t> bytes;  // what was captured (caplen)
  uint32_t wire_len = 0;           // length on the wire (may exceed bytes.size())
  int64_t ts_usec = 0;
};

class UROCE_API PcapReader {
 public:
  // nullptr and a message naming the file and the reason on failure.
  static std::unique_ptr<PcapReader> open(const std::string& path, std::string& error);
  ~PcapReader();
  PcapReader(const PcapReader&) = delete;
  PcapReader& operator=(const PcapReader&) = delete;

  // False at the end of the file, or on a read error (then error() is set).
  bool next(CapturedFrame& frame);
  // DLT_* link type; RoCE decoding needs DLT_EN10MB (1).
  int link_type() const;
  const std::string& error() const { return error_; }

 private:
  explicit PcapReader(pcap* p) : pcap_(p) {}
  pcap* pcap_;
  std::string error_;
};

class UROCE_API PcapWriter {
 public:
  static std::unique_ptr<PcapWriter> create(const std::string& path, std::string& error);
  ~PcapWriter();
  PcapWriter(const PcapWriter&) = delete;
  PcapWriter& operator=(const PcapWriter&) = delete;

  void write(std::span<const uint8_t> frame, int64_t ts_usec);
  // Flushes to disk; false (with error) if the file could not be written.
  bool flush(std::string& error);

 private:
  PcapWriter(pcap* p, pcap_dumper* d) : pcap_(p), dumper_(d) {}
  pcap* pcap_;
  pcap_dumper* dumper_;
};

}  // namespace uroce::capture
