// SPDX-License-Identifier: BSD-3-Clause
// uroce-perf's perftest flag table against perftest 4.5's own usage texts
// (tests/data/perftest/usage/): every flag each test lists is in the table
// for that test, and parsing it never ends in "not expected": it is taken,
// ignored with a line saying so, or refused (exit 2) with the reason.
#include <catch2/catch.hpp>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "options.h"

using namespace uroce::perf;

namespace {

const std::map<std::string, std::string> kBinaries = {
    {"ib_send_bw", "send_bw"},   {"ib_write_bw", "write_bw"},   {"ib_read_bw", "read_bw"},
    {"ib_atomic_bw", "atomic_bw"}, {"ib_send_lat", "send_lat"}, {"ib_write_lat", "write_lat"},
    {"ib_read_lat", "read_lat"}, {"ib_atomic_lat", "atomic_lat"}, {"raw_ethernet_bw", "raw_bw"},
    {"raw_ethernet_lat", "raw_lat"},
};

struct UsageFlag {
  char short_name;
  std::string long_name;
};

std::vector<UsageFlag> usage_flags(const std::string& binary) {
  std::ifstream in(std::string(PERFTEST_USAGE_DIR) + "/" + binary + ".txt");
  REQUIRE(in.good());
  std::vector<UsageFlag> out;
  const std::regex line(R"(^\s*(?:-([A-Za-z]),\s*)?--([A-Za-z0-9_-]+))");
  for (std::string l; std::getline(in, l);) {
    std::smatch m;
    if (std::regex_search(l, m, line)) out.push_back({m[1].matched ? m[1].str()[0] : char(0), m[2].str()});
  }
  return out;
}

const PerftestFlag* find_flag(const std::string& name) {
  for (const PerftestFlag& f : perftest_flags())
    if (name == f.long_name || (f.alias && name == f.alias)) return &f;
  return nullptr;
}

struct Outcome {
  int rc;
  std::string err;
};

// parse_options with stderr and stdout captured.
Outcome parse(std::vector<std::string> args) {
  args.insert(args.begin(), "uroce-perf");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  std::fflush(stderr);
  std::fflush(stdout);
  FILE* err = std::tmpfile();
  FILE* out = std::tmpfile();
  const int saved_err = dup(2), saved_out = dup(1);
  dup2(fileno(err), 2);
  dup2(fileno(out), 1);
  Options o;
  const int rc = parse_options(int(argv.size()), argv.data(), o);
  std::fflush(stderr);
  std::fflush(stdout);
  dup2(saved_err, 2);
  dup2(saved_out, 1);
  close(saved_err);
  close(saved_out);
  std::rewind(err);
  std::string text;
  for (int c; (c = std::fgetc(err)) != EOF;) text.push_back(char(c));
  std::fclose(err);
  std::fclose(out);
  return {rc, text};
}

// A value perftest would take for a flag that needs one.
std::string value_for(const std::string& name, const std::string& test) {
  static const std::map<std::string, std::string> v = {
      {"connection", "RC"}, {"atomic_type", "CMP_AND_SWAP"}, {"rate_units", "M"}, {"rate_limit_type", "SW"},
      {"force-link", "Ethernet"}, {"ib-dev", "uroce0"}, {"mtu", "1024"}, {"gid-index", "0"}, {"ib-port", "1"},
      {"duration", "2"}, {"margin", "0"}, {"iters", "10"}, {"tx-depth", "16"}, {"hop_limit", "64"},
      {"limit_bw", "0"}, {"limit_msgrate", "0"}, {"rate_limit", "1"}, {"out_json_file", "r.json"},
      {"source_mac", "02:00:00:00:00:01"}, {"dest_mac", "02:00:00:00:00:02"}, {"dest_ip", "10.0.0.2"},
      {"source_ip", "10.0.0.1"}, {"report-counters", "port_xmit_data"}, {"mmap", "file"}, {"tclass", "0"},
      {"ethertype", "0x0800"}, {"inline_size", "0"}};
  if (name == "output") return test.find("_lat") != std::string::npos ? "latency" : "bandwidth";
  if (name == "size") return test.rfind("atomic", 0) == 0 ? "8" : "64";
  auto it = v.find(name);
  return it == v.end() ? "1" : it->second;
}

// Base arguments: --loopback, except for --source_ip, which is checked
// against --ip (a client or server's address).
std::vector<std::string> args_for(const std::string& test, const PerftestFlag& f, const std::string& spelling) {
  std::vector<std::string> a = {test};
  if (std::string(f.long_name) == "source_ip") a.insert(a.end(), {"--dev", "net_null0", "--ip", "10.0.0.1"});
  else a.push_back("--loopback");
  a.push_back(spelling);
  if (f.takes_value) a.push_back(value_for(f.long_name, test));
  return a;
}

// The implemented flags refused with the values above: by perftest too
// (-T needs rdma_cm outside raw tests; -R needs two processes, not
// --loopback; a burst or typical size needs a
// rate limiter; no SW rate limiter in atomics), or by uroce-perf in its raw
// tests (no -b, --reversed or rate limiter there yet).
bool refused_with_these_values(const std::string& name, const std::string& test) {
  const bool raw = test.rfind("raw", 0) == 0;
  return (name == "tos" && !raw) || name == "rdma_cm" || name == "burst_size" || name == "typical_pkt_size" ||
         (name == "rate_limit" && (raw || test == "atomic_bw")) ||
         (raw && (name == "bidirectional" || name == "reversed"));
}

}  // namespace

TEST_CASE("every flag of every perftest usage text is in the table, for that test", "[perf][options]") {
  size_t checked = 0;
  for (const auto& [binary, test] : kBinaries) {
    const auto flags = usage_flags(binary);
    CHECK(flags.size() > 30);  // the texts are there and parsed
    for (const UsageFlag& u : flags) {
      INFO(binary << ": --" << u.long_name);
      const PerftestFlag* f = find_flag(u.long_name);
      REQUIRE(f != nullptr);
      if (u.short_name) CHECK(f->short_name == u.short_name);
      CHECK((f->tests & test_bit(test)) != 0);
      ++checked;
    }
    CHECK(perftest_binary(test) == binary);
  }
  CHECK(checked > 500);
}

TEST_CASE("no perftest flag is rejected as unknown; each is taken, ignored with a line, or refused", "[perf][options]") {
  for (const auto& [binary, test] : kBinaries) {
    for (const UsageFlag& u : usage_flags(binary)) {
      const PerftestFlag& f = *find_flag(u.long_name);
      std::vector<std::string> spellings = {"--" + u.long_name};
      if (u.short_name) spellings.push_back(std::string("-") + u.short_name);
      for (const std::string& s : spellings) {
        const auto args = args_for(test, f, s);
        const Outcome r = parse(args);
        std::string cmd;
        for (const auto& a : args) cmd += a + " ";
        INFO("uroce-perf " << cmd << "-> rc " << r.rc << ", stderr: " << r.err);
        CHECK(r.err.find("not expected") == std::string::npos);
        if (f.use == FlagUse::ignored) {
          CHECK(r.rc == -1);
          CHECK(r.err.find(" ignored: ") != std::string::npos);
        } else if (f.use == FlagUse::not_yet) {
          CHECK(r.rc == 2);
          CHECK(r.err.find("not supported yet") != std::string::npos);
        } else if (refused_with_these_values(f.long_name, test)) {
          CHECK(r.rc == 2);
          CHECK(r.err.find("uroce-perf: ") != std::string::npos);
        } else {
          CHECK((r.rc == -1 || r.rc == 0));  // 0: -h and -V, printed
        }
      }
    }
  }
}

TEST_CASE("flags another test type lists get perftest's treatment", "[perf][options]") {
  auto refused = [](std::vector<std::string> args, const char* why) {
    const Outcome r = parse(args);
    INFO(r.err);
    CHECK(r.rc == 2);
    CHECK(r.err.find(why) != std::string::npos);
  };
  refused({"write_lat", "--loopback", "-b"}, "Bidirectional is only available in BW test");
  refused({"read_lat", "--loopback", "-N"}, "NoPeak only valid for BW tests");
  refused({"write_bw", "--loopback", "-C"}, "Available only on Latency tests");
  refused({"write_bw", "--loopback", "-A", "CMP_AND_SWAP"}, "atomic");
  refused({"write_bw", "--loopback", "--use-srq"}, "SRQ only");
  refused({"write_lat", "--loopback", "--run_infinitely"}, "only in BW tests");
  // Between two processes: -b, --reversed and --run_infinitely run, not the last two together.
  refused({"write_bw", "--dev", "net_null0", "--ip", "10.0.0.1", "-b", "--run_infinitely"}, "with -b between two processes");
  refused({"write_bw", "--loopback", "--latency_gap", "5"}, "only for latency tests");
  refused({"raw_bw", "--loopback", "-x", "0"}, "GID index isn't supported for Raw Ethernet");
  refused({"atomic_bw", "--loopback", "-s", "64"}, "cannot be changed for Atomic");
  refused({"write_bw", "--loopback", "-c", "UD"}, "UD connection only possible in SEND verb");
  refused({"write_bw", "--loopback", "-c", "XRC"}, "XRC");
  refused({"read_bw", "--loopback", "-c", "UC"}, "UC connection not possible in READ/ATOMIC");
  refused({"atomic_bw", "--loopback", "-c", "UC"}, "UC connection not possible in READ/ATOMIC");
  refused({"read_lat", "--loopback", "-c", "UC"}, "UC connection not possible in READ/ATOMIC");
  refused({"write_bw", "--loopback", "-R"}, "no connection manager between them");
  // -R between two processes: RC, and the tests it runs so far.
  const std::vector<std::string> dev = {"--dev", "net_null0", "--ip", "10.0.0.1", "-R"};
  auto with_dev = [&](std::vector<std::string> a) {
    a.insert(a.begin() + 1, dev.begin(), dev.end());
    return a;
  };
  refused(with_dev({"write_bw", "-c", "UC"}), "UC is not supported in librdmacm");
  refused(with_dev({"send_bw", "-c", "UD"}), "UD's (SIDR) is not in uroce-perf yet");
  refused(with_dev({"write_lat"}), "write_bw, read_bw, send_bw and send_lat");
  refused(with_dev({"atomic_bw"}), "write_bw, read_bw, send_bw and send_lat");
  refused(with_dev({"write_bw", "server.example"}), "its RoCE address");
  refused(with_dev({"write_bw", "-T", "5"}), "does not set a TOS yet");
  refused({"write_bw", "--daemon", "/run/uroced.sock", "-R"}, "both ends in this process");
  for (const char* t : {"write_bw", "read_bw", "send_bw", "send_lat"}) {
    const Outcome r = parse(with_dev({t, "10.0.0.2"}));
    INFO(t << ": " << r.err);
    CHECK(r.rc == -1);
  }
  refused({"write_bw", "--loopback", "-e"}, "Events feature not available on WRITE verb");
  refused({"write_lat", "--loopback", "-X", "0"}, "Events feature not available on WRITE verb");
  // perftest takes -t in a latency test and does nothing with it
  const Outcome unused = parse({"write_lat", "--loopback", "-t", "4"});
  CHECK(unused.rc == -1);
  CHECK(unused.err.find("-t ignored: ib_write_lat does not use it") != std::string::npos);
  // a flag perftest does not have at all
  const Outcome unknown = parse({"write_bw", "--loopback", "--no-such-flag"});
  CHECK(unknown.rc == 2);
  CHECK(unknown.err.find("neither a perftest 4.5 flag nor one of uroce-perf's") != std::string::npos);
}

TEST_CASE("perftest's defaults and rules", "[perf][options]") {
  auto parsed = [](std::vector<std::string> args) {
    args.insert(args.begin(), "uroce-perf");
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    Options o;
    REQUIRE(parse_options(int(argv.size()), argv.data(), o) == -1);
    return o;
  };
  CHECK(parsed({"write_bw", "--loopback"}).iters == 5000);
  CHECK(parsed({"read_bw", "--loopback"}).iters == 1000);
  CHECK(parsed({"send_bw", "--loopback"}).iters == 1000);
  CHECK_FALSE(parsed({"send_bw", "--loopback"}).use_event);
  CHECK(parsed({"send_bw", "--loopback", "-e"}).use_event);
  CHECK(parsed({"read_lat", "--loopback", "-e", "-X", "3"}).comp_vector == 3);
  CHECK(parsed({"atomic_bw", "--loopback", "--idle-sleep-us", "0"}).idle_sleep_us == 0);
  CHECK(parsed({"write_lat", "--loopback"}).size == 2);
  CHECK(parsed({"atomic_lat", "--loopback"}).size == 8);
  CHECK(parsed({"write_bw", "--loopback"}).cq_mod == 1);          // above 8 KiB: no CQ moderation
  CHECK(parsed({"write_bw", "--loopback", "-s", "4096"}).cq_mod == 100);
  CHECK(parsed({"write_bw", "--loopback", "-s", "4K"}).size == 4096);
  CHECK(parsed({"write_bw", "--loopback", "-D", "8"}).margin_s == 2);  // a quarter of -D
  CHECK(parsed({"write_bw", "--loopback", "-D", "8"}).no_peak);
  CHECK(parsed({"write_bw", "--loopback", "--run_infinitely"}).duration == 5);
  CHECK(parsed({"write_bw", "--dev", "net_null0", "--ip", "10.0.0.1", "-b"}).bidirectional);
  CHECK(parsed({"send_bw", "--dev", "net_null0", "--ip", "10.0.0.1", "--reversed", "10.0.0.2"}).reversed);
  CHECK(parsed({"write_bw", "--dev", "net_null0", "--ip", "10.0.0.1", "--run_infinitely", "10.0.0.2"}).run_infinitely);
  CHECK(parsed({"send_bw", "--loopback", "-n", "100"}).rx_depth == 100);
  // -q: as many QPs as perftest users ask for (its own limit is 16384).
  CHECK(parsed({"write_bw", "--loopback", "-q", "10000"}).num_qps == 10000);
  CHECK(parsed({"write_bw", "--loopback", "-q", "16384"}).num_qps == 16384);
  const Outcome too_many = parse({"write_bw", "--loopback", "-q", "16385"});
  CHECK(too_many.rc > 0);
  CHECK(too_many.err.find("16384") != std::string::npos);
  // perftest 4.5 prints only the unsorted samples with -U (tests/data/perftest/*_lat_U), whatever its usage says.
  CHECK(parsed({"send_lat", "--loopback", "-U"}).report_unsorted);
  CHECK_FALSE(parsed({"send_lat", "--loopback", "-U"}).report_histogram);
  CHECK(parsed({"write_bw", "--loopback", "--out_json"}).json_default_file);
  CHECK(parsed({"write_bw", "--loopback", "--rate_limit", "2"}).burst_size == 128);
  CHECK(parsed({"write_bw", "--loopback", "-F"}).cpu_freq_f);
  // -c UD: perftest's receive depth (a receive per message up to 16000),
  // and its UD inline default for send_lat
  CHECK(parsed({"send_bw", "--loopback", "-c", "UD"}).rx_depth == 1000);
  CHECK(parsed({"send_bw", "--loopback", "-c", "UD", "-n", "40000"}).rx_depth == 16000);
  CHECK(parsed({"send_bw", "--loopback", "-c", "UD", "-r", "64"}).rx_depth == 64);
  CHECK(parsed({"send_lat", "--loopback", "-c", "UD"}).inline_size == 188);
  // -c UC runs SEND and WRITE, multi-packet messages included.
  for (const char* t : {"send_bw", "write_bw", "send_lat", "write_lat"}) {
    Options uc = parsed({t, "--loopback", "-c", "UC", "-s", "9000"});
    CHECK(uc.conn == Conn::uc);
    CHECK(uc.size == 9000);
  }
  // ... and its size cap at the path MTU: -s above it becomes the MTU, -a stops there
  Options ud = parsed({"send_bw", "--loopback", "-c", "UD", "-s", "4096"});
  cap_ud_sizes(ud, 1024);
  CHECK(sizes(ud) == std::vector<uint64_t>{1024});
  Options ud_all = parsed({"send_bw", "--loopback", "-c", "UD", "-a"});
  cap_ud_sizes(ud_all, 2048);
  CHECK(sizes(ud_all).size() == 11);
  CHECK(sizes(ud_all).back() == 2048);
  Options rc = parsed({"send_bw", "--loopback", "-s", "4096"});
  cap_ud_sizes(rc, 1024);
  CHECK(rc.size == 4096);
}

TEST_CASE("usage errors of uroce-perf's own options", "[perf][options]") {
  auto refused = [](std::vector<std::string> args, const char* why) {
    const Outcome r = parse(args);
    INFO(r.err);
    CHECK(r.rc == 2);
    CHECK(r.err.find(why) != std::string::npos);
  };
  refused({"write_bw", "--dev", "net_null0", "--ip", "10.0.0.300"}, "not an IPv4 or IPv6 address");
  refused({"write_bw", "--dev", "net_null0", "--ip", "10.0.0.1", "--mac", "02:00:zz"}, "not a MAC address");
  refused({"write_bw", "--loopback", "--dev", "net_null0"}, "it takes no --dev");
  refused({"write_bw", "--loopback", "-x", "3"}, "valid indexes 0..2");
  refused({"write_bw", "--dev", "net_null0", "--ip", "10.0.0.1", "-x", "2"}, "valid indexes 0..1");
  refused({"write_bw", "--loopback", "-i", "2"}, "one port");
  refused({"write_bw", "--dev", "net_null0", "--ip", "10.0.0.1", "--source_ip", "10.0.0.9"},
          "is not this side's address");
  refused({"write_bw", "--dev", "net_null0", "--ip", "10.0.0.1", "--ipv6"}, "IPv4");
  refused({"write_bw", "--loopback", "-f", "3"}, "DURATION > 2*MARGIN");
  refused({"write_bw", "--loopback", "-w", "-1"}, "Invalid Minimum BW Limit");
  refused({"write_lat", "--loopback", "--output", "bandwidth"}, "for LAT can be: latency");
}
