// SPDX-License-Identifier: BSD-3-Clause
// Threads the library starts for itself (the engine, the connection
// manager, event routers) never take a signal sent to the process.
//
// A process-directed signal goes to any thread that does not block it. Were
// it one of ours, the application's handler would run there, and a handler
// that calls exit() (as libraries such as PSM install for SIGTERM) would
// have the exit handlers join the very thread they run on. The signals the
// EAL's threads already block (drivers/dpdk/eal.cpp) plus the other
// asynchronous ones an application handles are blocked before the thread
// starts, so it inherits the mask; faults stay deliverable. The thread is
// named (at most 15 characters) for top -H, perf and gdb.
#pragma once

#include <pthread.h>
#include <signal.h>

#include <thread>
#include <utility>

namespace uroce::util {

// Blocks those signals in the calling thread; the mask before in *before.
// A thread the library is lent rather than starts (an EAL lcore) calls it
// first thing.
inline void block_async_signals(sigset_t* before = nullptr) {
  sigset_t async;
  sigemptyset(&async);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGALRM, SIGUSR1, SIGUSR2, SIGCHLD, SIGWINCH})
    sigaddset(&async, sig);
  pthread_sigmask(SIG_BLOCK, &async, before);
}

template <class F, class... Args>
std::thread quiet_thread(const char* name, F&& f, Args&&... args) {
  sigset_t before;
  block_async_signals(&before);
  std::thread t(std::forward<F>(f), std::forward<Args>(args)...);
  pthread_sigmask(SIG_SETMASK, &before, nullptr);
  pthread_setname_np(t.native_handle(), name);
  return t;
}

}  // namespace uroce::util
