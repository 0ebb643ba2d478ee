// SPDX-License-Identifier: BSD-3-Clause
// Start-up of the DPDK EAL for applications that use real ports: once per
// process, with hugepages when the machine has them and without otherwise,
// and never with more of the machine than it needs (no PCI scan unless
// asked, no telemetry socket, nothing left behind in /dev/hugepages).
#pragma once

#include "uroce/api.h"

#include <string>
#include <vector>

namespace uroce {

struct EalConfig {
  // Extra EAL arguments from the user (--eal "ARGS", split on spaces). They
  // win: a flag given here replaces the default chosen for the same thing
  // (lcores, memory mode, log level, file prefix, PCI policy).
  std::vector<std::string> args{};
  // PCI devices to allow (-a); when empty, --no-pci.
  std::vector<std::string> pci{};
  // Default: "uroce-<pid>".
  std::string file_prefix{};
  // --log-level=error unless the user set a log level.
  bool quiet = false;
};

// Starts the EAL once per process; a second call (or a call after someone
// else started it) returns true and does nothing.
//
// With hugepages (a mounted hugetlbfs with free pages): --in-memory.
// Without: --no-huge -m 512 --no-shconf and a one-line notice on stderr,
// shown once per hugepage state (docs/ports.md).
// Always --no-telemetry. Unless the user passes -l/-c/--lcores, lcore 0
// runs on the CPUs the process may already use (its affinity mask), so
// `taskset` decides where a uroce process polls.
//
// It removes EAL runtime directories (/var/run/dpdk/uroce-<pid>) that
// processes no longer alive left behind, and arranges that this process
// leaves nothing behind either: at exit(), and on SIGINT, SIGTERM and
// SIGHUP when the application has no handler of its own for them, the XDP
// programs of its af_xdp ports are detached and its runtime directory is
// removed (the process then ends as the signal would have ended it).
//
// On failure: false and a message with what EAL reported, the EAL command
// line, and what to do.
UROCE_API bool eal_init(const EalConfig& config, std::string& error);

// The way out of a process that called eal_init: closes every ethdev port
// still open (rte_eth_dev_close; af_xdp detaches its XDP program), runs
// rte_eal_cleanup, and removes EAL's runtime directory. Ports of the memif
// PMD are left open, and rte_eal_cleanup is skipped once one was opened:
// DPDK 22.11 crashes when memif is torn down while its interrupt thread
// handles the peer's disconnect. Call it last: no port, Device or mbuf may
// be used afterwards.
UROCE_API void eal_shutdown();

// A hugetlbfs mount whose page size has free pages, writable by us.
UROCE_API bool eal_hugepages_available();

UROCE_API bool eal_initialized();

}  // namespace uroce
