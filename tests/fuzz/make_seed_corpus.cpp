// SPDX-License-Identifier: BSD-3-Clause
// Writes every frame of the given pcap files as one libFuzzer seed each,
// prefixed with the two control bytes of fuzz_input.h. The control bytes
// vary with the frame number so the seeds start from different splits.
//
// usage: make_seed_corpus OUT_DIR FILE.pcap...
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "fuzz_input.h"
#include "uroce/capture/pcap_file.h"

namespace {

bool write_seed(const std::filesystem::path& path, std::span<const uint8_t> frame, unsigned n) {
  // Cut 1 walks the header region; every other seed uses three segments
  // with cut 2 inside the pad/ICRC tail.
  const uint8_t control[uroce::fuzz::kControlBytes] = {uint8_t(14 + (n * 11) % 100),
                                                       uint8_t(n % 2 ? 0x80 | (n % 9) : 0)};
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(control), sizeof(control));
  out.write(reinterpret_cast<const char*>(frame.data()), std::streamsize(frame.size()));
  return bool(out);
}

int add_file(const std::filesystem::path& out_dir, const std::string& pcap) {
  std::string error;
  auto reader = uroce::capture::PcapReader::open(pcap, error);
  if (!reader) {
    std::fprintf(stderr, "make_seed_corpus: %s\n", error.c_str());
    return -1;
  }
  uroce::capture::CapturedFrame f;
  int n = 0;
  const std::string stem = std::filesystem::path(pcap).stem().string();
  while (reader->next(f)) {
    if (!write_seed(out_dir / (stem + "-" + std::to_string(n)), f.bytes, unsigned(n))) return -1;
    ++n;
  }
  if (!reader->error().empty()) {
    std::fprintf(stderr, "make_seed_corpus: %s\n", reader->error().c_str());
    return -1;
  }
  return n;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s OUT_DIR FILE.pcap...\n", argv[0]);
    return 2;
  }
  const std::filesystem::path out_dir(argv[1]);
  std::filesystem::create_directories(out_dir);
  int total = 0;
  for (int i = 2; i < argc; ++i) {
    const int n = add_file(out_dir, argv[i]);
    if (n < 0) return 1;
    total += n;
  }
  std::printf("%d seeds in %s\n", total, out_dir.c_str());
  return 0;
}
