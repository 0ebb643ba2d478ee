// SPDX-License-Identifier: BSD-3-Clause
// What a uroce process leaves behind unless it is undone: the XDP program
// the af_xdp PMD attached to an interface (it stays attached after the
// process dies) and EAL's runtime directory (/var/run/dpdk/<prefix>/, which
// EAL never removes). Both are remembered here so that every way out undoes
// them: eal_shutdown(), exit() (atexit), and SIGINT/SIGTERM/SIGHUP.
#pragma once

#include <cstdint>
#include <string>

namespace uroce::dpdk {

// EAL's runtime directory, to remove at the end (primary processes only).
void remember_runtime_dir(const char* dir);

// An af_xdp port on interface `ifindex` is open / was closed by its PMD
// (rte_eth_dev_close detaches the program itself).
void remember_xdp(uint16_t port_id, unsigned ifindex);
void forget_xdp(uint16_t port_id);

// A memif port was opened in this process: DPDK 22.11's memif must not be
// torn down under its interrupt thread (docs/ports.md), so eal_shutdown
// leaves memif ports and rte_eal_cleanup alone from then on.
void remember_memif();
bool memif_opened();

// Undoes the remembered kernel state with system calls only (no DPDK, no
// allocation): safe in a signal handler and after a crash of DPDK's state.
void undo_kernel_state();

// SIGINT, SIGTERM and SIGHUP undo the kernel state and then end the
// process as the signal would have; only for signals the application left
// at their default action.
void install_signal_cleanup();

// Removes <base>/uroce-<pid>/ directories whose process is gone (and whose
// EAL config, if any, no live process holds locked). `own` is skipped.
// Returns how many were removed.
unsigned remove_stale_runtime_dirs(const std::string& base, const std::string& own);

// Removes the files of `dir` (not recursively), then `dir`. Async-signal-safe.
bool remove_dir_files(const char* dir);

// Detaches the XDP program of interface `ifindex` through rtnetlink.
// Async-signal-safe. True if the kernel accepted the request.
bool xdp_detach(unsigned ifindex);

}  // namespace uroce::dpdk
