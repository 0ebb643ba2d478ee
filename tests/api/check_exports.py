#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Fails if liburoce.so exports anything beyond its public API.

Every dynamic symbol the library defines must be either
  - in namespace uroce, outside the internal namespaces (engine, transport,
    memory, detail, sim, exchange, test), with every name of its qualified
    name spelled in an installed header (lib/include), or
  - a template instantiation or helper of the C++ runtime (std::, __gnu_cxx::)
    that the compiler emits with vague linkage, or an ELF/ABI special.

Usage: check_exports.py LIB INCLUDE_DIR        (reads `nm -D --defined-only -C LIB`)
       check_exports.py --symbols FILE INCLUDE_DIR   (one demangled symbol a line: self-test)
"""
import pathlib
import re
import subprocess
import sys

INTERNAL = {"engine", "transport", "memory", "detail", "sim", "exchange", "test", "internal"}
PREFIXES = ("vtable for ", "typeinfo for ", "typeinfo name for ", "VTT for ", "guard variable for ",
            "construction vtable for ", "non-virtual thunk to ", "virtual thunk to ")
RUNTIME = ("std::", "__gnu_cxx::", "__cxxabiv1::")
SPECIALS = {"_init", "_fini", "_edata", "_end", "__bss_start"}


def symbols_from_nm(lib):
    out = subprocess.run(["nm", "-D", "--defined-only", "-C", lib], check=True,
                         capture_output=True, text=True).stdout
    for line in out.splitlines():
        parts = line.split(" ", 2)
        if len(parts) == 3:
            yield parts[2]


def qualified_name(sym):
    for p in PREFIXES:
        if sym.startswith(p):
            sym = sym[len(p):]
    # Drop the argument list and template arguments: keep the scope chain.
    depth, out = 0, []
    for ch in sym:
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif ch == "(" and depth == 0:
            break
        elif depth == 0:
            out.append(ch)
    name = "".join(out).strip()
    return re.sub(r"\[abi:[^\]]*\]", "", name.split(" ")[-1])


def check(symbols, include_dir):
    headers = " ".join(p.read_text() for p in pathlib.Path(include_dir).rglob("*.h"))
    words = set(re.findall(r"[A-Za-z_]\w*", headers))
    bad = []
    count = 0
    for sym in symbols:
        name = qualified_name(sym)
        if name in SPECIALS or name.startswith(RUNTIME) or sym.startswith(RUNTIME):
            continue
        count += 1
        parts = [p for p in name.split("::") if p]
        if not parts or parts[0] != "uroce":
            bad.append(f"not in namespace uroce: {sym}")
            continue
        inner = [p for p in parts[1:] if p not in INTERNAL]
        if len(inner) != len(parts) - 1:
            bad.append(f"internal namespace: {sym}")
            continue
        for p in inner:
            ident = p.lstrip("~")
            if ident.startswith("operator"):
                continue
            if ident not in words:
                bad.append(f"'{ident}' is in no installed header: {sym}")
                break
    return count, bad


def main(argv):
    if len(argv) == 4 and argv[1] == "--symbols":
        symbols = pathlib.Path(argv[2]).read_text().splitlines()
        include_dir = argv[3]
    elif len(argv) == 3:
        symbols = list(symbols_from_nm(argv[1]))
        include_dir = argv[2]
    else:
        print(__doc__, file=sys.stderr)
        return 2
    count, bad = check(symbols, include_dir)
    for b in bad:
        print("check_exports:", b)
    print(f"check_exports: {count} uroce symbols exported, {len(bad)} not public API")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
