#!/usr/bin/env python3
"""Generate fakefs/kernel/trace/data/btf-6.12.json.gz: the BTF that probe events of Debian's
Linux 6.12 amd64 kernel use for argument names and types (CONFIG_PROBE_EVENTS_BTF_ARGS):
the prototypes of the vmlinux functions the simulated kernel has (the bundled symbol table,
``fakefs/kernel/data/kallsyms.gz``: traceable functions and the tracepoints' ``__probestub_*``
stubs, whose first parameter is the tracepoint's data), and every type they reach.

Run (Python standard library only; the same dbg package and cache as mkevents.py):

    python3 tools/mkbtf.py            # writes the data file (~1 min with the package cached)
    python3 tools/mkbtf.py --check    # rebuilds and compares with the checked-in file

How: the ``.BTF`` section of the exact vmlinux Debian built (``linux-image-<abi>-amd64-dbg``)
is the kernel's own type information (pahole made it from DWARF at build time).  The tool
parses it (``include/uapi/linux/btf.h``'s layout), takes the first ``BTF_KIND_FUNC`` of each
wanted name (as ``btf_find_by_name_kind()`` finds it), and writes the closure of the types
reachable from their prototypes, renumbered in BTF order (id 0 stays ``void``).  Nothing of
the kernel's source or code is copied: these are facts of the built kernel.

Output (gzipped JSON, sorted keys, deterministic): ``{"kernel": ..., "funcs": {name: proto
id}, "types": [entry, ...]}`` where an entry is a list starting with its kind:
``["int", name, bytes, bits, bit offset, signed]``, ``["ptr", type]``, ``["array", type,
nelems]``, ``["struct"|"union", name, bytes, [[member, type, bit offset, bitfield size],
...]]``, ``["enum", name, bytes, signed]``, ``["enum64", name, bytes, signed]``,
``["fwd", name, union]``, ``["typedef", name, type]``, ``["const"|"volatile"|"restrict"|
"type_tag", type]``, ``["proto", return type, [[param, type], ...]]``, ``["float", name,
bytes]``.  Type 0 (``void``) is not stored: ids in the file count from 1.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from elf import Elf  # noqa: E402
from mkevents import ABI, DBG_PKG, DEB_VERSION, VMLINUX, run  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(REPO, "fakefs", "kernel", "trace", "data", "btf-6.12.json.gz")
KALLSYMS = os.path.join(REPO, "fakefs", "kernel", "data", "kallsyms.gz")

KINDS = {1: "int", 2: "ptr", 3: "array", 4: "struct", 5: "union", 6: "enum", 7: "fwd",
         8: "typedef", 9: "volatile", 10: "const", 11: "restrict", 12: "func", 13: "proto",
         14: "var", 15: "datasec", 16: "float", 17: "decl_tag", 18: "type_tag", 19: "enum64"}


def parse_btf(blob: bytes):
    """[None] + one dict per BTF type (id order): kind, name, and the kind's data."""
    magic, _ver, _fl, hdr_len, type_off, type_len, str_off, _str_len = struct.unpack_from(
        "<HBBIIIII", blob, 0)
    assert magic == 0xEB9F, hex(magic)
    strs = blob[hdr_len + str_off:]

    def name(off):
        return strs[off:strs.index(b"\0", off)].decode()

    types = [None]
    p = hdr_len + type_off
    end = p + type_len
    while p < end:
        name_off, info, size_type = struct.unpack_from("<III", blob, p)
        p += 12
        kind = KINDS[(info >> 24) & 0x1F]
        vlen = info & 0xFFFF
        kflag = info >> 31
        t = {"kind": kind, "name": name(name_off), "st": size_type}
        if kind == "int":
            (enc,) = struct.unpack_from("<I", blob, p)
            p += 4
            t["bits"] = enc & 0xFF
            t["off"] = (enc >> 16) & 0xFF
            t["signed"] = bool((enc >> 24) & 1)
        elif kind == "array":
            t["elem"], _idx, t["n"] = struct.unpack_from("<III", blob, p)
            p += 12
        elif kind in ("struct", "union"):
            mem = []
            for _ in range(vlen):
                mn, mt, mo = struct.unpack_from("<III", blob, p)
                p += 12
                if kflag:
                    mem.append((name(mn), mt, mo & 0xFFFFFF, mo >> 24))
                else:
                    mem.append((name(mn), mt, mo, 0))
            t["members"] = mem
        elif kind in ("enum", "enum64"):
            p += vlen * (8 if kind == "enum" else 12)
            t["signed"] = bool(kflag)
        elif kind == "fwd":
            t["union"] = bool(kflag)
        elif kind == "proto":
            params = []
            for _ in range(vlen):
                pn, pt = struct.unpack_from("<II", blob, p)
                p += 8
                params.append((name(pn), pt))
            t["params"] = params
        elif kind == "var":
            p += 4
        elif kind == "datasec":
            p += vlen * 12
        elif kind == "decl_tag":
            p += 4
        types.append(t)
    return types


def wanted_names():
    """The simulated kernel's vmlinux text symbols (functions and probe stubs)."""
    names = set()
    with gzip.open(KALLSYMS, "rt", encoding="ascii") as f:
        for line in f:
            if line.startswith("#"):
                continue
            _d, _k, rest = line.rstrip("\n").split(" ", 2)
            if "\t" not in rest:
                names.add(rest)
    return names


def refs(t):
    k = t["kind"]
    if k in ("ptr", "typedef", "const", "volatile", "restrict", "type_tag"):
        return [t["st"]]
    if k == "array":
        return [t["elem"]]
    if k in ("struct", "union"):
        return [m[1] for m in t["members"]]
    if k == "proto":
        return [t["st"]] + [p[1] for p in t["params"]]
    return []


def build(vmlinux):
    elf = Elf(vmlinux)
    sec = elf.byname[".BTF"]
    types = parse_btf(bytes(elf.data[sec["off"]:sec["off"] + sec["size"]]))
    want = wanted_names()
    funcs = {}
    for tid, t in enumerate(types):
        if t and t["kind"] == "func" and t["name"] in want and t["name"] not in funcs:
            funcs[t["name"]] = t["st"]
    keep = set()
    todo = list(funcs.values())
    while todo:
        tid = todo.pop()
        if tid == 0 or tid in keep:
            continue
        keep.add(tid)
        todo.extend(refs(types[tid]))
    order = sorted(keep)
    new = {old: i + 1 for i, old in enumerate(order)}
    new[0] = 0
    out = []
    for old in order:
        t = types[old]
        k, n = t["kind"], t["name"]
        if k == "int":
            out.append(["int", n, t["st"], t["bits"], t["off"], t["signed"]])
        elif k == "ptr":
            out.append(["ptr", new[t["st"]]])
        elif k == "array":
            out.append(["array", new[t["elem"]], t["n"]])
        elif k in ("struct", "union"):
            out.append([k, n, t["st"], [[m[0], new[m[1]], m[2], m[3]] for m in t["members"]]])
        elif k in ("enum", "enum64"):
            out.append([k, n, t["st"], t["signed"]])
        elif k == "fwd":
            out.append(["fwd", n, t["union"]])
        elif k == "typedef":
            out.append(["typedef", n, new[t["st"]]])
        elif k in ("const", "volatile", "restrict", "type_tag"):
            out.append([k, new[t["st"]]])
        elif k == "proto":
            out.append(["proto", new[t["st"]], [[p[0], new[p[1]]] for p in t["params"]]])
        elif k == "float":
            out.append(["float", n, t["st"]])
        else:
            raise SystemExit("unexpected kind %s reached (type %d)" % (k, old))
    doc = {"kernel": "Linux %s (Debian %s), %s" % (ABI, DEB_VERSION, DBG_PKG),
           "funcs": {name: new[pid] for name, pid in funcs.items()}, "types": out}
    blob = json.dumps(doc, sort_keys=True, separators=(",", ":")).encode()
    print("%d functions of %d wanted, %d of %d types" % (len(funcs), len(want), len(out),
                                                       len(types) - 1), file=sys.stderr)
    return gzip.compress(blob, 9, mtime=0)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cache", default=os.path.expanduser("~/.cache/fakefs/mkevents"))
    ap.add_argument("--out", default=OUT)
    ap.add_argument("--check", action="store_true")
    a = ap.parse_args()
    deb = os.path.join(a.cache, "%s_%s_amd64.deb" % (DBG_PKG, DEB_VERSION))
    root = os.path.join(a.cache, "dbg")
    vmlinux = os.path.join(root, VMLINUX)
    if not os.path.exists(vmlinux):
        os.makedirs(a.cache, exist_ok=True)
        if not os.path.exists(deb):
            run(["apt-get", "download", "%s=%s" % (DBG_PKG, DEB_VERSION)], cwd=a.cache)
        os.makedirs(root, exist_ok=True)
        run(["sh", "-c", "dpkg-deb --fsys-tarfile \"$0\" | tar -x -C \"$1\" ./\"$2\"",
             deb, root, VMLINUX])
    data = build(vmlinux)
    if a.check:
        with open(a.out, "rb") as f:
            same = f.read() == data
        print("same as the checked-in file" if same else "DIFFERENT from the checked-in file")
        sys.exit(0 if same else 1)
    with open(a.out, "wb") as f:
        f.write(data)
    print("wrote %s (%d bytes)" % (a.out, len(data)))


if __name__ == "__main__":
    main()
