# SPDX-License-Identifier: BSD-3-Clause
"""The rxe VM image: Debian's kernel (never installed) and an initramfs.

    image.py CACHE_DIR        build (or reuse) the image; exit 77 if it cannot be had

The kernel comes from Debian's linux-image package, fetched with
`apt-get download` and unpacked with `dpkg -x` into CACHE_DIR. The initramfs
holds busybox-static, the rdma-core tools, rdmacm-utils, perftest, fio, fi_pingpong, qperf, ucx_perftest and ucx_info
(with every library `ldd` names), UCX's transport modules (dlopen'ed from
LIBDIR/ucx, so added with their own libraries), the rxe provider, iproute2's `tc` (busybox's has no netem), the
kernel modules (rdma_rxe and what it needs, netem/ifb/mirred for the loss
scenarios, htb/red for the DCQCN router VM) and guest/. It is an uncompressed cpio: the guest unpacks it
without a decompressor, which matters under TCG.

Everything is cached; a stamp of the inputs decides whether to rebuild.
Concurrent builders take an flock on CACHE_DIR/lock.
"""

import fcntl
import glob
import hashlib
import lzma
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "netns"))
from harness import Skip  # noqa: E402

HOST_PACKAGES = ["qemu-system-x86", "busybox-static", "rdma-core", "ibverbs-utils",
                 "ibverbs-providers", "perftest", "iproute2", "tcpdump", "ucx-utils", "rdmacm-utils", "fio",
                 "libfabric-bin", "qperf"]
TOOLS = ["ip", "rdma", "ibv_devinfo", "ibv_rc_pingpong", "ibv_uc_pingpong", "ibv_ud_pingpong", "ibv_srq_pingpong",
         "ib_write_bw", "ib_read_bw", "ib_send_bw", "ib_atomic_bw",
         "ib_write_lat", "ib_read_lat", "ib_send_lat", "ib_atomic_lat", "ucx_perftest", "ucx_info",
         "rping", "ucmatose", "udaddy", "rdma_server", "rdma_client", "fio", "fi_pingpong", "qperf"]
SBIN_TOOLS = ["tc"]
# Load order matters and the .deb has no modules.dep: these are resolved
# through each module's own depends= list. crc32_generic: rxe's ICRC asks
# for the "crc32" shash and nothing autoloads it. virtio_console: the
# control channel (an emulated 8250 lost interrupts under load). sch_htb,
# sch_red: the DCQCN bottleneck's router VM (tests/netns/dcqcn/vm_router.py).
# rdma_ucm: the kernel's rdma_cm (with ib_cm) and its /dev/infiniband/rdma_cm,
# for the rdmacm-utils programs and perftest -R. 8021q: rxe on a VLAN
# interface (guest/uix-vlan).
MODULES = ["virtio_pci", "virtio_net", "virtio_console", "crc32_generic", "ib_core", "ib_uverbs", "rdma_rxe",
           "rdma_ucm", "8021q",
           "sch_prio", "sch_netem", "cls_u32", "sch_ingress", "act_mirred", "ifb", "sch_htb", "sch_red"]
LIBDIR = "/usr/lib/x86_64-linux-gnu"


def sh(argv, **kw):
    return subprocess.run(argv, check=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, **kw).stdout


def installed(pkg):
    p = subprocess.run(["dpkg-query", "-W", "-f=${Status}", pkg], stdout=subprocess.PIPE,
                       stderr=subprocess.DEVNULL, text=True)
    return "ok installed" in p.stdout


def ensure_host_packages(log):
    missing = [p for p in HOST_PACKAGES if not installed(p)]
    if not missing:
        return
    log(f"apt-get install {' '.join(missing)}")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    for attempt in ("install", "update-then-install"):
        if attempt == "update-then-install":
            subprocess.run(["apt-get", "update", "-q"], stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
        p = subprocess.run(["apt-get", "install", "-y", "-q", "--no-install-recommends"] + missing,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
        if p.returncode == 0:
            return
    if not installed("qemu-system-x86"):
        raise Skip(f"qemu-system-x86 cannot be installed: {p.stdout[-800:]}")
    raise RuntimeError(f"apt-get install {' '.join(missing)} failed:\n{p.stdout[-2000:]}")


def kernel_package():
    """The package linux-image-amd64 depends on (UROCE_INTEROP_KPKG overrides)."""
    if os.environ.get("UROCE_INTEROP_KPKG"):
        return os.environ["UROCE_INTEROP_KPKG"]
    for _ in range(2):
        p = subprocess.run(["apt-cache", "depends", "linux-image-amd64"], stdout=subprocess.PIPE,
                           stderr=subprocess.DEVNULL, text=True)
        m = re.search(r"Depends: (linux-image-\d\S*)", p.stdout)
        if m:
            return m.group(1)
        subprocess.run(["apt-get", "update", "-q"], stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    raise Skip("apt knows no linux-image-amd64: the kernel package cannot be had")


def fetch_kernel(cache, log):
    pkg = kernel_package()
    kver = pkg[len("linux-image-"):]
    debs = glob.glob(os.path.join(cache, f"{pkg}_*_amd64.deb"))
    if not debs:
        log(f"apt-get download {pkg}")
        p = subprocess.run(["apt-get", "download", pkg], cwd=cache, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True)
        debs = glob.glob(os.path.join(cache, f"{pkg}_*_amd64.deb"))
        if p.returncode != 0 or not debs:
            raise Skip(f"apt-get download {pkg} failed: the kernel package cannot be had:\n{p.stdout[-800:]}")
    root = os.path.join(cache, f"kernel-{kver}")
    if not os.path.exists(os.path.join(root, ".extracted")):
        log(f"dpkg -x {os.path.basename(debs[0])}")
        sh(["rm", "-rf", root])
        sh(["dpkg", "-x", debs[0], root])
        open(os.path.join(root, ".extracted"), "w").close()
    return kver, os.path.basename(debs[0]), root


def extract_vmlinux(bzimage, out):
    """The ELF inside the bzImage: qemu boots it through its PVH note, which
    skips the kernel's XZ self-decompression (seconds under TCG)."""
    if os.path.exists(out) and os.path.getmtime(out) >= os.path.getmtime(bzimage):
        return out
    data = open(bzimage, "rb").read()
    pos = data.find(b"\xfd7zXZ\x00")
    if pos < 0:
        return None
    elf = lzma.LZMADecompressor(format=lzma.FORMAT_XZ).decompress(data[pos:])
    if elf[:4] != b"\x7fELF":
        return None
    with open(out + ".tmp", "wb") as f:
        f.write(elf)
    os.replace(out + ".tmp", out)
    return out


def module_order(moddir):
    paths = {}
    for p in glob.glob(os.path.join(moddir, "kernel", "**", "*.ko"), recursive=True):
        paths[os.path.basename(p)[:-3].replace("-", "_")] = p
    order, seen = [], set()

    def visit(m):
        if m in seen:
            return
        seen.add(m)
        if m not in paths:
            return  # built into the kernel
        info = open(paths[m], "rb").read()
        dep = re.search(rb"\x00depends=([^\x00]*)\x00", info)
        for d in (dep.group(1).decode().split(",") if dep and dep.group(1) else []):
            visit(d.replace("-", "_"))
        order.append(m)

    for m in MODULES:
        visit(m)
    return [(m, paths[m]) for m in order]


def ldd_libs(path):
    # The system's libraries, whatever the caller's LD_LIBRARY_PATH says:
    # meson points it at the build tree, where uroce's drop-in
    # libibverbs.so.1 would stand in for the one the VM's tools need.
    env = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}
    out = sh(["ldd", path], env=env)
    libs = re.findall(r"=> (/\S+)", out) + re.findall(r"^\s*(/\S+) \(", out, re.M)
    return libs


def stamp_of(inputs):
    h = hashlib.sha256()
    for p in sorted(inputs):
        st = os.stat(p)
        h.update(f"{p} {st.st_size} {int(st.st_mtime)}\n".encode())
    return h.hexdigest()


def build(cache, log=lambda s: print(f"[image] {s}", file=sys.stderr, flush=True)):
    """Returns a dict: kernel (path), initrd (path), kver, deb."""
    # Absolute: the stamp holds the module paths under it, and a relative
    # CACHE (a run by hand) repacked what meson's absolute one had packed.
    cache = os.path.abspath(cache)
    os.makedirs(cache, exist_ok=True)
    with open(os.path.join(cache, "lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        ensure_host_packages(log)
        kver, deb, root = fetch_kernel(cache, log)
        bz = os.path.join(root, "boot", f"vmlinuz-{kver}")
        kernel = extract_vmlinux(bz, os.path.join(cache, "vmlinux")) or bz
        mods = module_order(os.path.join(root, "lib", "modules", kver))
        bins = [os.path.join("/usr/bin", t) for t in TOOLS] + [os.path.join("/usr/sbin", t) for t in SBIN_TOOLS]
        provider = glob.glob(os.path.join(LIBDIR, "libibverbs", "librxe-rdmav*.so"))
        # UCX loads its transports from the ucx/ directory next to libuct
        # (dlopen: ldd of ucx_perftest does not name them).
        ucx_modules = sorted(glob.glob(os.path.join(LIBDIR, "ucx", "libuct_*.so.0")))
        # glibc dlopens libgcc_s for pthread_exit's unwinding (rping's
        # threads end with it): no ldd names it.
        ucx_modules += [os.path.join(LIBDIR, "libgcc_s.so.1")]
        missing = [b for b in bins + ["/bin/busybox"] if not os.path.exists(b)]
        if missing or not provider:
            raise RuntimeError(f"missing on the host: {' '.join(missing) or 'the rxe provider'}")
        guest = sorted(glob.glob(os.path.join(HERE, "guest", "*")))
        inputs = bins + provider + ucx_modules + guest + [p for _, p in mods] + [os.path.abspath(__file__), "/bin/busybox"]
        initrd = os.path.join(cache, "initrd.cpio")
        stamp = os.path.join(cache, "initrd.stamp")
        want = stamp_of(inputs)
        if not (os.path.exists(initrd) and os.path.exists(stamp) and open(stamp).read() == want):
            log(f"packing the initramfs ({len(mods)} modules, kernel {kver})")
            from cpio import Archive
            a = Archive()
            a.tree_from_host(bins + provider + ucx_modules, ldd_libs)
            a.busybox("/bin/busybox")
            a.add_file("/etc/libibverbs.d/rxe.driver", "/etc/libibverbs.d/rxe.driver")
            for name, path in mods:
                a.add_file(f"/usr/lib/modules/{name}.ko", path)
            a.add_bytes("/etc/modules.order", "".join(m + "\n" for m, _ in mods).encode())
            a.add_bytes("/etc/kver", (kver + "\n").encode())
            a.add_bytes("/etc/passwd", b"root:x:0:0:root:/root:/bin/sh\n")
            a.add_bytes("/etc/group", b"root:x:0:\n")
            # libfabric's name server stops by connecting to itself at
            # "localhost": without this it waits forever at exit.
            a.add_bytes("/etc/hosts", b"127.0.0.1 localhost\n::1 localhost\n")
            for g in guest:
                dest = "/init" if os.path.basename(g) == "init" else "/usr/bin/" + os.path.basename(g)
                a.add_file(dest, g, mode=0o755)
            a.write(initrd + ".tmp")
            os.replace(initrd + ".tmp", initrd)
            with open(stamp, "w") as f:
                f.write(want)
        return {"kernel": kernel, "initrd": initrd, "kver": kver, "deb": deb}


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    try:
        img = build(sys.argv[1])
    except Skip as e:
        print(f"SKIP: {e}")
        return 77
    print(f"kernel {img['kernel']}\ninitrd {img['initrd']} ({os.path.getsize(img['initrd']) >> 20} MiB)\n"
          f"kver {img['kver']} from {img['deb']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
