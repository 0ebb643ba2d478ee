# SPDX-License-Identifier: BSD-3-Clause
"""A newc cpio archive (what the kernel unpacks as its initramfs), in memory.

Host files are stored under their canonical path (the host is usr-merged, so
/lib/x86_64-linux-gnu/libc.so.6 lands in /usr/lib/x86_64-linux-gnu/), with
symlinks recreated along the way and /bin, /sbin, /lib, /lib64 as links into
/usr, so the ELF interpreter and every library path resolve as on the host.
"""

import os
import stat

S_DIR, S_REG, S_LNK = 0o040000, 0o100000, 0o120000


class Archive:
    def __init__(self):
        self.entries = {}  # path without leading '/' -> (mode, bytes)
        for d in ("usr/bin", "usr/sbin", "usr/lib", "usr/lib64", "proc", "sys", "dev", "tmp", "root", "etc", "run"):
            self._dir(d)
        for link, target in (("bin", "usr/bin"), ("sbin", "usr/sbin"), ("lib", "usr/lib"), ("lib64", "usr/lib64")):
            self.entries[link] = (S_LNK | 0o777, target.encode())

    def _dir(self, path):
        parts = path.strip("/").split("/")
        for i in range(1, len(parts) + 1):
            p = "/".join(parts[:i])
            if p and p not in self.entries:
                self.entries[p] = (S_DIR | 0o755, b"")

    def _put(self, path, mode, data):
        path = path.strip("/")
        self._dir(os.path.dirname(path))
        self.entries[path] = (mode, data)

    def add_bytes(self, path, data, mode=0o644):
        self._put(path, S_REG | mode, data)

    def add_file(self, path, host_path, mode=None):
        with open(host_path, "rb") as f:
            data = f.read()
        self._put(path, S_REG | (mode if mode is not None else stat.S_IMODE(os.stat(host_path).st_mode)), data)

    def add_host(self, host_path):
        """host_path at its canonical place, following a chain of symlinks."""
        d = os.path.realpath(os.path.dirname(host_path))
        p = os.path.join(d, os.path.basename(host_path))
        if p.strip("/") in self.entries:
            return
        if os.path.islink(p):
            target = os.readlink(p)
            self._put(p, S_LNK | 0o777, target.encode())
            self.add_host(target if target.startswith("/") else os.path.join(d, target))
        else:
            self.add_file(p, p)

    def tree_from_host(self, paths, libs_of):
        for p in paths:
            self.add_host(p)
            for lib in libs_of(p):
                self.add_host(lib)

    def busybox(self, path):
        """busybox-static plus a link for each applet the archive lacks."""
        self.add_file("/usr/bin/busybox", path, mode=0o755)
        import subprocess
        applets = subprocess.run([path, "--list"], stdout=subprocess.PIPE, text=True, check=True).stdout.split()
        for a in applets:
            for d in ("usr/bin", "usr/sbin"):
                if f"{d}/{a}" in self.entries:
                    break
            else:
                if a != "busybox":
                    self.entries[f"usr/bin/{a}"] = (S_LNK | 0o777, b"busybox")

    def write(self, out):
        with open(out, "wb") as f:
            ino = 1
            for path in sorted(self.entries, key=lambda p: (p.count("/"), p)):
                mode, data = self.entries[path]
                f.write(_record(ino, mode, path, data))
                ino += 1
            f.write(_record(0, 0, "TRAILER!!!", b""))


def _record(ino, mode, name, data):
    name_b = name.encode() + b"\0"
    nlink = 2 if (mode & 0o170000) == S_DIR else 1
    fields = (ino, mode, 0, 0, nlink, 0, len(data), 0, 0, 0, 0, len(name_b), 0)
    head = b"070701" + b"".join(b"%08X" % v for v in fields)
    out = head + name_b
    out += b"\0" * (-len(out) % 4)
    out += data
    out += b"\0" * (-len(out) % 4)
    return out
