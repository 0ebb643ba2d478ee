// SPDX-License-Identifier: BSD-3-Clause
#include "rxe_capture.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "test_support.h"

namespace uroce::test {
namespace {

uint32_t be(const uint8_t* p, int n) {
  uint32_t v = 0;
  for (int i = 0; i < n; ++i) v = v << 8 | p[i];
  return v;
}

// Untagged Ethernet / IPv4 / UDP to 4791, as every rxe capture is.
bool read_raw(const std::vector<uint8_t>& f, RawRoce& r) {
  if (f.size() < 14 + 20 || be(&f[12], 2) != 0x0800 || f[14] >> 4 != 4 || f[23] != 17) return false;
  const size_t l4 = 14 + size_t(f[14] & 0x0F) * 4;
  if (f.size() < l4 + 8 + 12 || be(&f[l4 + 2], 2) != 4791) return false;
  r.bytes = &f;
  r.ip_src = be(&f[26], 4);
  r.sport = uint16_t(be(&f[l4], 2));
  r.udp_len = uint16_t(be(&f[l4 + 4], 2));
  r.bth = l4 + 8;
  r.opcode = f[r.bth];
  r.dest_qp = be(&f[r.bth + 5], 3);
  r.ack_req = f[r.bth + 8] & 0x80;
  r.psn = be(&f[r.bth + 9], 3);
  return true;
}

RxeCapture load(const std::filesystem::path& path) {
  RxeCapture c;
  c.name = path.filename().string();
  c.frames = read_pcap(path.string());
  for (size_t i = 0; i < c.frames.size(); ++i) {
    RawRoce r;
    r.frame_no = int(i + 1);
    if (read_raw(c.frames[i], r)) c.roce.push_back(r);
  }
  return c;
}

std::vector<RxeCapture> load_all() {
  std::vector<std::filesystem::path> paths;
  for (const auto& e : std::filesystem::directory_iterator(data_path("rxe")))
    if (e.path().extension() == ".pcap") paths.push_back(e.path());
  std::sort(paths.begin(), paths.end());
  std::vector<RxeCapture> out;
  for (const auto& p : paths) out.push_back(load(p));
  return out;
}

std::string trim(const std::string& s) {
  const size_t a = s.find_first_not_of(" \t");
  const size_t b = s.find_last_not_of(" \t");
  return a == std::string::npos ? "" : s.substr(a, b - a + 1);
}

}  // namespace

uint32_t RawRoce::be32_at(size_t off) const { return be(bytes->data() + bth + off, 4); }

uint64_t RawRoce::be64_at(size_t off) const { return uint64_t(be32_at(off)) << 32 | be32_at(off + 4); }

const std::vector<RxeCapture>& rxe_captures() {
  static const std::vector<RxeCapture> all = load_all();
  return all;
}

const RxeCapture& rxe_capture(const std::string& name) {
  for (const auto& c : rxe_captures())
    if (c.name == name) return c;
  throw std::runtime_error("no capture " + name);
}

std::map<std::string, int> readme_packet_counts() {
  std::ifstream in(data_path("rxe/README.md"));
  if (!in) throw std::runtime_error("cannot read rxe/README.md");
  std::map<std::string, int> counts;
  std::string line;
  // Rows look like: | `file.pcap` | ... | 50: 40 data + 10 ACK |
  while (std::getline(in, line)) {
    if (line.rfind("| `", 0) != 0 || line.find(".pcap`") == std::string::npos) continue;
    const std::string name = line.substr(3, line.find('`', 3) - 3);
    const std::string body = trim(line).substr(0, trim(line).size() - 1);  // drop the closing '|'
    const std::string last = trim(body.substr(body.rfind('|') + 1));
    counts[name] = std::stoi(last);
  }
  return counts;
}

}  // namespace uroce::test
