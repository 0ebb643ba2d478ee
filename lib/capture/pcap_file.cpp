// SPDX-License-Identifier: BSD-3-Clause
#include "uroce/capture/pcap_file.h"

#include <pcap/pcap.h>

namespace uroce::capture {

std::unique_ptr<PcapReader> PcapReader::open(const std::string& path, std::string& error) {
  char errbuf[PCAP_ERRBUF_SIZE] = {};
  pcap_t* p = pcap_open_offline(path.c_str(), errbuf);
  if (p == nullptr) {
    // libpcap names the file in some messages ("No such file") only.
    const std::string msg = errbuf;
    error = msg.find(path) == std::string::npos ? path + ": " + msg : msg;
    return nullptr;
  }
  return std::unique_ptr<PcapReader>(new PcapReader(p));
}

PcapReader::~PcapReader() { pcap_close(pcap_); }

int PcapReader::link_type() const { return pcap_datalink(pcap_); }

bool PcapReader::next(CapturedFrame& frame) {
  pcap_pkthdr* hdr = nullptr;
  const u_char* data = nullptr;
  int rc = pcap_next_ex(pcap_, &hdr, &data);
  if (rc == 1) {
    frame.bytes = {data, hdr->caplen};
    frame.wire_len = hdr->len;
    // In unsigned arithmetic: a pcapng timestamp can put any 64-bit count
    // of seconds here, past what microseconds in an int64_t hold (modulo
    // 2^64 then, where signed overflow would be undefined).
    frame.ts_usec = int64_t(uint64_t(hdr->ts.tv_sec) * 1000000u + uint64_t(hdr->ts.tv_usec));
    return true;
  }
  if (rc == PCAP_ERROR) error_ = pcap_geterr(pcap_);
  return false;
}

std::unique_ptr<PcapWriter> PcapWriter::create(const std::string& path, std::string& error) {
  pcap_t* p = pcap_open_dead(DLT_EN10MB, 65535);
  if (p == nullptr) {
    error = "pcap_open_dead failed";
    return nullptr;
  }
  pcap_dumper_t* d = pcap_dump_open(p, path.c_str());
  if (d == nullptr) {
    error = path + ": " + pcap_geterr(p);
    pcap_close(p);
    return nullptr;
  }
  return std::unique_ptr<PcapWriter>(new PcapWriter(p, d));
}

PcapWriter::~PcapWriter() {
  pcap_dump_close(dumper_);
  pcap_close(pcap_);
}

void PcapWriter::write(std::span<const uint8_t> frame, int64_t ts_usec) {
  pcap_pkthdr hdr{};
  hdr.ts.tv_sec = ts_usec / 1000000;
  hdr.ts.tv_usec = ts_usec % 1000000;
  hdr.caplen = hdr.len = uint32_t(frame.size());
  pcap_dump(reinterpret_cast<u_char*>(dumper_), &hdr, frame.data());
}

bool PcapWriter::flush(std::string& error) {
  if (pcap_dump_flush(dumper_) != 0) {
    error = "writing the capture failed";
    return false;
  }
  return true;
}

}  // namespace uroce::capture
