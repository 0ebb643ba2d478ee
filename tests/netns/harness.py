# SPDX-License-Identifier: BSD-3-Clause
"""Life cycle of one netns test: everything it creates is undone on every way out.

A Harness is a context manager. Whatever the test creates (network namespaces,
processes, files) registers an undo action with defer(); on leaving the block
the actions run newest first, each guarded so that one failure does not stop
the rest. SIGTERM, SIGINT and SIGHUP raise Terminated so the same path runs:
meson's timeout sends SIGTERM to the test's process group and SIGKILL 0.5 s
later, so undo actions must be quick (kill with SIGKILL, no long waits).

If even that is cut short (SIGKILL), the next harness deletes the leftover
namespaces: their names carry the pid of the test that made them, and a
namespace whose owner is dead is stale.
"""

import os
import re
import signal
import subprocess
import sys

NS_PREFIX = "uroce-nt-"
NETNS_DIR = "/var/run/netns"
SKIP = 77  # meson's "skipped" exit status


class Skip(Exception):
    """The environment cannot run this test (not a failure): exit 77."""


class Failure(Exception):
    """The test ran and an assertion failed: exit 1 with this message."""


class Terminated(BaseException):
    """A termination signal arrived; unwinds through every finally block."""


def run(argv, timeout=20, check=True, what=None):
    """Runs a short helper command; returns (exit status, combined output)."""
    try:
        p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           stdin=subprocess.DEVNULL, timeout=timeout, text=True)
    except subprocess.TimeoutExpired:
        raise Failure(f"{what or ' '.join(argv)}: no answer within {timeout} s")
    except FileNotFoundError:
        raise Skip(f"{argv[0]} is not installed")
    if check and p.returncode != 0:
        raise Failure(f"{what or ' '.join(argv)} failed (exit {p.returncode}): {p.stdout.strip()}")
    return p.returncode, p.stdout


def _pid_alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def sweep_stale_namespaces():
    """Deletes namespaces left by harnesses that were SIGKILLed."""
    try:
        names = os.listdir(NETNS_DIR)
    except OSError:
        return
    for name in names:
        m = re.match(re.escape(NS_PREFIX) + r"(\d+)-", name)
        if m and int(m.group(1)) != os.getpid() and not _pid_alive(int(m.group(1))):
            run(["ip", "netns", "del", name], check=False)


def require_root():
    if os.geteuid() != 0:
        raise Skip("needs root (network namespaces, veth pairs, qdiscs); CI runs as root")
    for tool in ("ip", "tc"):
        if not any(os.access(os.path.join(d, tool), os.X_OK) for d in ("/usr/sbin", "/sbin", "/usr/bin", "/bin")):
            raise Skip(f"'{tool}' not found (apt-get install iproute2)")


class Harness:
    def __init__(self, tag):
        # Unique per process and per test: parallel tests never share a name.
        self.prefix = f"{NS_PREFIX}{os.getpid()}-{tag}"
        self._undo = []
        self._old_handlers = {}

    def defer(self, what, fn):
        self._undo.append((what, fn))

    def new_netns(self, role):
        name = f"{self.prefix}-{role}"
        run(["ip", "netns", "add", name])
        self.defer(f"delete netns {name}", lambda: run(["ip", "netns", "del", name], check=False, timeout=5))
        # IPv6 off: no router solicitations or DAD frames on the test links.
        # 'default' must be set before the namespace gets its interfaces.
        run(["ip", "netns", "exec", name, "sh", "-c",
             "echo 1 > /proc/sys/net/ipv6/conf/all/disable_ipv6; "
             "echo 1 > /proc/sys/net/ipv6/conf/default/disable_ipv6"])
        run(["ip", "-n", name, "link", "set", "lo", "up"])
        return name

    def _on_signal(self, signum, _frame):
        raise Terminated(f"signal {signal.Signals(signum).name}")

    def __enter__(self):
        for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            self._old_handlers[s] = signal.signal(s, self._on_signal)
        sweep_stale_namespaces()
        return self

    def cleanup(self):
        # A second signal during cleanup must not abandon the rest of it.
        for s in self._old_handlers:
            signal.signal(s, signal.SIG_IGN)
        errors = []
        while self._undo:
            what, fn = self._undo.pop()
            try:
                fn()
            except BaseException as e:  # noqa: BLE001 - keep undoing the rest
                errors.append(f"{what}: {e}")
        for s, h in self._old_handlers.items():
            signal.signal(s, h)
        for e in errors:
            print(f"cleanup: {e}", file=sys.stderr)

    def __exit__(self, *exc):
        self.cleanup()
        return False


def main_wrapper(body):
    """Runs body() and maps its outcome to meson's exit statuses."""
    try:
        body()
    except Skip as e:
        print(f"SKIP: {e}")
        sys.exit(SKIP)
    except Failure as e:
        print(f"FAIL: {e}")
        sys.exit(1)
    except Terminated as e:
        print(f"FAIL: terminated ({e}); everything created was removed")
        sys.exit(1)
    sys.exit(0)
