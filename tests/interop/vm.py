# SPDX-License-Identifier: BSD-3-Clause
"""One rxe VM under qemu (TCG), and the control channel to its uix-agent.

The VM's NIC is a tap on the test's bridge (qemu runs inside the test's
network namespace, where it creates the tap). The console (ttyS0) goes to a
log file; a virtio-serial port named "uix" is a unix socket this class holds:
commands go down it as `ID BASE64`, results come back as `UIX-DONE ID RC
BASE64`. qemu is started with wait=on, so nothing the guest says is lost
before we connect.
"""

import base64
import os
import re
import socket
import threading
import time

from harness import Failure
from procs import Proc



class Unresponsive(Failure):
    """The VM stopped answering on its control port (see run_group.py)."""


DONE = re.compile(r"^UIX-DONE (\d+) (\d+) ([A-Za-z0-9+/=]*)$")


class VM:
    def __init__(self, h, work, image, ns, tap, mac, ip_cidr, mtu, name="rxe", extra_nics=(), append=""):
        """extra_nics: more (tap, mac) pairs, eth1, eth2, ... in the guest;
        append: more kernel command line (uix.rxe=0: no rxe0, see guest/init)."""
        self.work = work
        self.console_path = os.path.join(work, f"console-{name}.log")
        self.sock_path = f"/tmp/uix-{os.getpid()}-{name}.sock"  # sun_path is 108 bytes at most
        self.mon_path = f"/tmp/uix-{os.getpid()}-{name}.mon"
        for p in (self.sock_path, self.mon_path):
            if os.path.exists(p):
                os.unlink(p)
            h.defer(f"remove {p}", lambda p=p: os.path.exists(p) and os.unlink(p))
        argv = [
            "qemu-system-x86_64", "-name", name, "-machine", "pc", "-accel", "tcg", "-cpu", "qemu64",
            "-smp", "1", "-m", "512M", "-nodefaults", "-no-user-config", "-display", "none", "-no-reboot",
            "-kernel", image["kernel"], "-initrd", image["initrd"],
            "-append", f"console=ttyS0 panic=-1 nokaslr quiet loglevel={os.environ.get('UROCE_INTEROP_LOGLEVEL', '4')} rdinit=/init "
                       f"uix.ip={ip_cidr} uix.mtu={mtu} uix.name={name} {append}".rstrip(),
            "-serial", "file:" + self.console_path,
            # The control channel: a virtio-serial port. It was the second
            # 8250 serial port first, and under load the guest sometimes sat
            # idle with a command unread or an answer unsent (an interrupt
            # lost): vm_probe found its vCPU in native_safe_halt each time.
            "-device", "virtio-serial-pci,id=vser",
            "-chardev", f"socket,id=ctl,path={self.sock_path},server=on,wait=on",
            "-device", "virtserialport,bus=vser.0,chardev=ctl,name=uix",
            # HMP monitor: vm_probe samples a hung guest's vCPU through it.
            "-monitor", f"unix:{self.mon_path},server=on,wait=off",
            # vnet_hdr=off: no checksum or GSO offload between guest and tap, so
            # every frame on the bridge is a complete wire frame.
            "-netdev", f"tap,id=n0,ifname={tap},script=no,downscript=no,vnet_hdr=off",
            "-device", f"virtio-net-pci,netdev=n0,mac={mac},romfile=",
        ]
        for i, (xtap, xmac) in enumerate(extra_nics, 1):
            argv += ["-netdev", f"tap,id=n{i},ifname={xtap},script=no,downscript=no,vnet_hdr=off",
                     "-device", f"virtio-net-pci,netdev=n{i},mac={xmac},romfile="]
        self.t0 = time.monotonic()
        self.proc = Proc(h, "qemu", argv, os.path.join(work, f"qemu-{name}.out"), ns=ns)
        self.sock = self._connect()
        h.defer("close the VM's control socket", self.sock.close)
        self._buf = b""
        self._results = {}
        self._cv = threading.Condition()
        self._next = 1
        self.info = {}
        self.noise = []  # lines that are not the agent's: a sign of a broken channel
        self._reader = threading.Thread(target=self._read_loop, daemon=True)
        self._reader.start()

    def _connect(self):
        end = time.monotonic() + 20
        while time.monotonic() < end:
            if not self.proc.running():
                raise Failure(f"qemu exited at start:\n{self.proc.describe()}")
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                s.connect(self.sock_path)
                return s
            except OSError:
                s.close()
                time.sleep(0.05)
        raise Failure(f"qemu's control socket {self.sock_path} did not appear within 20 s")

    def _read_loop(self):
        while True:
            try:
                data = self.sock.recv(65536)
            except OSError:
                data = b""
            with self._cv:
                if not data:
                    self._results["eof"] = True
                    self._cv.notify_all()
                    return
                self._buf += data
                while b"\n" in self._buf:
                    line, self._buf = self._buf.split(b"\n", 1)
                    self._on_line(line.decode(errors="replace").strip("\r"))
                self._cv.notify_all()

    def _on_line(self, line):
        if line.startswith("UIX-READY "):
            self.info = dict(kv.split("=", 1) for kv in line.split()[1:] if "=" in kv)
            self._results["ready"] = True
            return
        m = DONE.match(line)
        if m:
            out = base64.b64decode(m.group(3)).decode(errors="replace")
            self._results[int(m.group(1))] = (int(m.group(2)), out)
        elif line:
            self.noise.append(line)

    def console(self):
        try:
            with open(self.console_path, errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def _wait_for(self, key, timeout_s, what):
        end = time.monotonic() + timeout_s
        with self._cv:
            while key not in self._results:
                if self._results.get("eof"):
                    raise Failure(f"the VM went away while {what}; console:\n{self.console()[-3000:]}")
                left = end - time.monotonic()
                if left <= 0:
                    raise Unresponsive(f"the VM did not answer within {timeout_s} s while {what}; "
                                  f"console:\n{self.console()[-3000:]}")
                self._cv.wait(min(left, 0.2))
            return self._results.pop(key)

    def wait_ready(self, timeout_s=60):
        self._wait_for("ready", timeout_s, "booting")
        self.boot_s = time.monotonic() - self.t0
        return self.info

    def send(self, script):
        """Queues a shell script; returns its id for result()."""
        with self._cv:
            cid = self._next
            self._next += 1
        self.sock.sendall(f"{cid} {base64.b64encode(script.encode()).decode()}\n".encode())
        return cid

    def result(self, cid, timeout_s, what="running a command"):
        return self._wait_for(cid, timeout_s, what)

    def run(self, script, timeout_s=30, check=True):
        """Runs a script in the VM; returns (exit status, output)."""
        rc, out = self.result(self.send(script), timeout_s, f"running: {script.strip()[:200]}")
        if check and rc != 0:
            raise Failure(f"in the VM, exit {rc}: {script.strip()[:300]}\n{out[-2000:]}")
        return rc, out

    def counters(self):
        _, out = self.run("uix-counters")
        return {k: int(v) for k, v in (ln.split("=", 1) for ln in out.split() if "=" in ln)}

    def probe(self):
        """Raw vCPU samples of a guest that stopped answering (vm_probe)."""
        import vm_probe
        return vm_probe.sample(self.mon_path)

    def kallsyms(self):
        import gzip
        import vm_probe
        _, out = self.run("gzip -c /proc/kallsyms | base64 -w 0", timeout_s=120)
        return vm_probe.parse_kallsyms(gzip.decompress(base64.b64decode(out.strip())).decode(errors="replace"))

    def poweroff(self):
        if self.proc.running():
            try:
                self.sock.sendall(f"0 {base64.b64encode(b'poweroff -f').decode()}\n".encode())
                self.proc.p.wait(timeout=5)
            except Exception:  # noqa: BLE001 - the harness kills it anyway
                pass
