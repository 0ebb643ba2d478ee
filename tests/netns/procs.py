# SPDX-License-Identifier: BSD-3-Clause
"""Processes of a test: started in a namespace, logged to a file, killed by pid.

Children stay in the test's process group, so meson's SIGTERM to the group
reaches them even if the harness itself is SIGKILLed; the harness also kills
each one it started, by pid, when it unwinds.
"""

import os
import signal
import subprocess
import time

from harness import Failure, run


class Proc:
    def __init__(self, harness, name, argv, log_path, ns=None, env=None, err_path=None):
        """err_path: stderr to a file of its own (a program whose stdout is
        compared line by line); by default stderr joins stdout in log_path."""
        self.name = name
        self.argv = list(argv)
        self.log_path = log_path
        self.err_path = err_path
        self.timed_out = False
        full = (["ip", "netns", "exec", ns] if ns else []) + self.argv
        self._log = open(log_path, "w")
        self._err = open(err_path, "w") if err_path else None
        self.p = subprocess.Popen(full, stdout=self._log, stderr=self._err or subprocess.STDOUT,
                                  stdin=subprocess.DEVNULL, env=env)
        harness.defer(f"kill {name} (pid {self.p.pid})", self.kill)

    def running(self):
        return self.p.poll() is None

    def kill(self, sig=signal.SIGKILL):
        if self.p.poll() is None:
            try:
                os.kill(self.p.pid, sig)
            except ProcessLookupError:
                pass
            try:
                self.p.wait(timeout=2)
            except subprocess.TimeoutExpired:
                pass
        self._log.close()
        if self._err:
            self._err.close()

    def stop(self, grace_s):
        """SIGTERM, then SIGKILL if it is still there after grace_s."""
        if self.p.poll() is None:
            os.kill(self.p.pid, signal.SIGTERM)
            try:
                self.p.wait(timeout=grace_s)
            except subprocess.TimeoutExpired:
                self.kill()

    @property
    def returncode(self):
        return self.p.returncode

    def output(self):
        # The child writes the file itself; our handle never buffers anything.
        with open(self.log_path, errors="replace") as f:
            return f.read()

    def errors(self):
        if not self.err_path:
            return ""
        with open(self.err_path, errors="replace") as f:
            return f.read()

    def status(self):
        rc = self.p.returncode
        if self.timed_out:
            return "timed out (killed)"
        if rc is None:
            return "still running"
        if rc < 0:
            name = signal.Signals(-rc).name
            return f"killed by {name}"
        return f"exit {rc}"

    def describe(self, tail_lines=40):
        lines = self.output().splitlines()
        if self.err_path:
            lines += ["--- stderr"] + self.errors().splitlines()
        tail = "\n".join("    " + ln for ln in lines[-tail_lines:])
        return f"{self.name} [{self.status()}]: {' '.join(self.argv)}\n{tail}"


def wait_all(procs, deadline_s, grace_after_failure_s=5.0):
    """Waits for every process; kills those still running at the deadline.

    Once one process fails, the others get grace_after_failure_s to notice
    (a peer that lost its partner may otherwise wait forever).
    """
    end = time.monotonic() + deadline_s
    while True:
        live = [p for p in procs if p.running()]
        if not live:
            return
        failed = [p for p in procs if not p.running() and p.returncode != 0]
        if failed:
            end = min(end, time.monotonic() + grace_after_failure_s)
        if time.monotonic() >= end:
            for p in live:
                p.timed_out = True
                p.kill()
            return
        time.sleep(0.02)


def listening(ns, port):
    """Is a TCP socket in LISTEN state on `port` in namespace ns (None: ours)?"""
    files = ["/proc/net/tcp", "/proc/net/tcp6"]
    if ns:
        _, text = run(["ip", "netns", "exec", ns, "cat"] + files, check=False)
    else:
        text = ""
        for f in files:
            try:
                with open(f) as fh:
                    text += fh.read()
            except OSError:
                pass
    for line in text.splitlines()[1:]:
        parts = line.split()
        # local_address is HEXIP:HEXPORT; state 0A is LISTEN.
        if len(parts) > 3 and ":" in parts[1] and parts[3] == "0A":
            if int(parts[1].rsplit(":", 1)[1], 16) == port:
                return True
    return False


def wait_listening(proc, ns, port, timeout_s):
    """Waits until proc listens on port, without connecting to it (a probe
    connection would be taken for the client)."""
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        if not proc.running():
            raise Failure(f"{proc.name} exited before listening on TCP port {port}:\n{proc.describe()}")
        if listening(ns, port):
            return
        time.sleep(0.05)
    raise Failure(f"{proc.name} did not listen on TCP port {port} within {timeout_s} s:\n{proc.describe()}")
