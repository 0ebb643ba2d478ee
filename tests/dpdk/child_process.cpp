// SPDX-License-Identifier: BSD-3-Clause
#include "child_process.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace uroce::test {
namespace {

std::string temp_file(const char* tag) {
  std::string path = "/tmp/uroce-eal-" + std::string(tag) + "-XXXXXX";
  const int fd = mkstemp(path.data());
  if (fd >= 0) ::close(fd);
  return path;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  std::remove(path.c_str());
  return ss.str();
}

}  // namespace

ChildResult run_in_child(const std::function<int(const Report&)>& body, unsigned timeout_s) {
  const std::string facts_path = temp_file("facts"), err_path = temp_file("err"), out_path = temp_file("out");
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    alarm(timeout_s);
    if (!std::freopen(err_path.c_str(), "w", stderr) || !std::freopen(out_path.c_str(), "w", stdout)) _exit(120);
    std::setvbuf(stderr, nullptr, _IONBF, 0);
    FILE* facts = std::fopen(facts_path.c_str(), "w");
    if (facts == nullptr) _exit(121);
    const int rc = body([&](const std::string& k, const std::string& v) {
      std::fprintf(facts, "%s=%s\n", k.c_str(), v.c_str());
      std::fflush(facts);
    });
    std::fclose(facts);
    std::fflush(nullptr);
    _exit(rc);  // no atexit handlers: the EAL of the child dies with it
  }
  ChildResult r;
  int status = 0;
  if (pid > 0) waitpid(pid, &status, 0);
  if (pid > 0 && WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  if (pid > 0 && WIFSIGNALED(status)) r.signal = WTERMSIG(status);
  std::istringstream facts(slurp(facts_path));
  std::string line;
  while (std::getline(facts, line)) {
    const size_t eq = line.find('=');
    if (eq != std::string::npos) r.facts[line.substr(0, eq)] = line.substr(eq + 1);
  }
  r.err = slurp(err_path);
  r.out = slurp(out_path);
  return r;
}

}  // namespace uroce::test
