#!/usr/bin/env python3
"""Generate fakefs/kernel/trace/data/events-6.12.gz: every trace event of Debian's Linux 6.12
amd64 kernel (vmlinux and a fixed set of modules), as that kernel prints it in tracefs.

Run (needs apt-get, dpkg-deb, tar and pahole; Python standard library only):

    apt-get update && apt-get install -y dwarves      # pahole, once
    python3 tools/mkevents.py     # first run ~2.5 min (1 GB download, 1.8 GB on disk), then ~45 s

Options: ``--cache DIR`` (default ~/.cache/fakefs/mkevents), ``--out FILE``, ``--check``
(compare with the checked-in data instead of writing it).

How: the ``linux-image-<abi>-amd64-dbg`` package has the exact vmlinux and .ko files Debian
built, with symbols and BTF.  The generator reads them as data (no kernel code is copied)
and replays what 6.12 does at boot and at module load:

* ``_ftrace_events`` (vmlinux: ``__start/__stop_ftrace_events``; modules: the section, with
  its relocations applied) is the array of ``struct trace_event_call *`` in link order;
  ``event_trace_enable()`` runs ``event_init()`` over it, ``trace_event_raw_init()`` gives each
  event the next free type from ``__TRACE_LAST_TYPE`` up (an IDA), ftrace-internal events
  (``trace_export.c``) keep their fixed ``enum trace_type`` and have no ``raw_init``.
* syscall events: ``init_ftrace_syscalls()`` maps ``sys_call_table`` entries to
  ``syscall_metadata`` through the symbol name (``arch_syscall_match_sym_name()``); events
  whose metadata is not mapped fail ``init_syscall_trace()`` with -ENOSYS and are not
  registered.  Their print fmt and fields are built like ``__set_enter_print_fmt()`` and
  ``syscall_enter_define_fields()``.
* fields: ``event_define_fields()`` walks ``class->fields_array`` (offset = ALIGN(offset,
  align) from ``sizeof(struct trace_entry)``); ``f_show()`` prints them.
* eval maps (``TRACE_DEFINE_ENUM``/``TRACE_DEFINE_SIZEOF``, section ``_ftrace_eval_map``)
  rewrite print fmts and array field types as ``trace_event_update_all()`` does
  (``update_event_printk()``, ``update_event_fields()``, ``sanitize_field_type()``), system
  matched by pointer as in the kernel.

Struct layouts come from ``pahole`` (BTF of the same vmlinux), not from guesses.  The record
size of every TRACE_EVENT class is checked against ``struct trace_event_raw_<class>`` in BTF.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import struct
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from elf import Elf  # noqa: E402  (sibling modules of the tool)
from kalgo import (align, arch_syscall_match_sym_name,  # noqa: E402
                   update_event_printk, update_field_type)

DEB_VERSION = "6.12.117-1~deb12u1"
ABI = "6.12.117+deb12-amd64"
DBG_PKG = "linux-image-%s-dbg" % ABI
VMLINUX = "usr/lib/debug/boot/vmlinux-%s" % ABI
MODDIR = "usr/lib/debug/lib/modules/%s/kernel/" % ABI

TRACE_ENTRY_SIZE = 8          # sizeof(struct trace_entry)
TRACE_FUNCTION_TYPE = 0xFFFFFFFFFFFFFFFF
FL_IGNORE_ENABLE = 1 << 2     # TRACE_EVENT_FL_IGNORE_ENABLE_BIT = 2 (include/linux/trace_events.h)
FL_TRACEPOINT = 1 << 3        # TRACE_EVENT_FL_TRACEPOINT_BIT = 3
FL_DYNAMIC = 1 << 4


# ---------------------------------------------------------------- struct layouts (pahole)

STRUCTS = ("trace_event_call", "trace_event_class", "trace_event_fields", "trace_event",
           "syscall_metadata", "trace_eval_map", "tracepoint")
_MEMBER = re.compile(r"(?:\(\*(\w+)\)\(.*\)|(\w+)(?:\[\d*\])*(?::\d+)?)\s*;\s*/\*\s*(\d+)(?::\s*(\d+))?\s+(\d+)\s*\*/")


def layouts(vmlinux):
    """{struct: {member: byte offset}} from ``pahole -C`` (BTF of this very vmlinux).
    Members of anonymous unions/structs are flattened; bit-fields map to (offset, bit)."""
    out = subprocess.run(["pahole", "-C", ",".join(STRUCTS), vmlinux], check=True,
                         capture_output=True, text=True).stdout
    res, cur = {}, None
    for line in out.splitlines():
        m = re.match(r"struct (\w+) \{", line)
        if m:
            cur = res.setdefault(m.group(1), {})
            continue
        m = _MEMBER.search(line)
        if m and cur is not None:
            name = m.group(1) or m.group(2)
            off = int(m.group(3))
            cur.setdefault(name, off if m.group(4) is None else (off, int(m.group(4))))
    for s in STRUCTS:
        assert s in res, s
    return res


def struct_sizes(vmlinux):
    """{struct name: size} of every struct in the BTF (``pahole -s``)."""
    out = subprocess.run(["pahole", "-s", vmlinux], check=True, capture_output=True,
                         text=True).stdout
    sizes = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[1].isdigit():
            sizes.setdefault(parts[0], int(parts[1]))
    return sizes


# ---------------------------------------------------------------- reading one image

class Image:
    """The trace events of one ELF image (vmlinux or a module), read and registered the way
    the kernel does.  ``events`` are dicts in registration order."""

    def __init__(self, elf, L, module=""):
        self.elf, self.L, self.module = elf, L, module
        self.printfmt = {}        # print_fmt pointer -> current text (shared like the buffer)
        self.fieldlists = {}      # fields list head (class, or syscall metadata) -> fields
        self.events = []

    # struct member readers
    def m64(self, st, addr, member):
        return self.elf.u64(addr + self.L[st][member])

    def m32(self, st, addr, member):
        return self.elf.i32(addr + self.L[st][member])

    def call_array(self, start, stop):
        return [self.elf.u64(a) for a in range(start, stop, 8)]

    def read_call(self, call):
        e, C = self.elf, "trace_event_call"
        cls = self.m64(C, call, "class")
        flags = self.m32(C, call, "flags")
        nameptr = self.m64(C, call, "name")
        name = e.cstr(e.u64(nameptr) if flags & FL_TRACEPOINT else nameptr)
        system = e.cstr(self.m64("trace_event_class", cls, "system"))
        return dict(addr=call, cls=cls, flags=flags, name=name, system=system,
                    sysptr=self.m64("trace_event_class", cls, "system"),
                    type=e.i32(call + self.L[C]["event"] + self.L["trace_event"]["type"]),
                    fmtptr=self.m64(C, call, "print_fmt"), data=self.m64(C, call, "data"),
                    raw_init=self.m64("trace_event_class", cls, "raw_init"),
                    reg=self.m64("trace_event_class", cls, "reg"))

    def fields_array(self, ev):
        """event_define_fields(): the class's fields with their offsets."""
        e, F = self.elf, "trace_event_fields"
        arr = self.m64("trace_event_class", ev["cls"], "fields_array")
        fsize = self.L["sizeof"]["trace_event_fields"]
        out, offset, maxal = [], TRACE_ENTRY_SIZE, 4
        while True:
            tptr = e.u64(arr)
            if tptr == 0:
                break
            if tptr == TRACE_FUNCTION_TYPE:
                fn = e.func_name(self.m64(F, arr, "define_fields"))
                if fn != "syscall_enter_define_fields":
                    raise SystemExit("unknown define_fields %s for %s" % (fn, ev["name"]))
                meta = ev["data"]
                S = "syscall_metadata"
                nb = self.m32(S, meta, "nb_args")
                types, args = self.m64(S, meta, "types"), self.m64(S, meta, "args")
                offset = 16   # offsetof(struct syscall_trace_enter, args)
                for i in range(nb):
                    out.append(dict(type=e.cstr(e.u64(types + 8 * i)),
                                    name=e.cstr(e.u64(args + 8 * i)),
                                    offset=offset, size=8, signed=0, len=0))
                    offset += 8
                maxal = 8
                break
            sz, al = self.m32(F, arr, "size"), self.m32(F, arr, "align")
            boff, bit = self.L[F]["is_signed"]
            signed = (e.u32(arr + boff) >> bit) & 1
            offset = align(offset, al)
            out.append(dict(type=e.cstr(tptr), name=e.cstr(self.m64(F, arr, "name")),
                            offset=offset, size=sz, signed=signed,
                            len=self.m32(F, arr, "len")))
            offset += sz
            maxal = max(maxal, al)
            arr += fsize
        return out, align(offset, maxal)

    def register(self, ev, syscall_ok=None):
        """event_init() + event_define_fields(); returns False if raw_init fails."""
        init = self.elf.func_name(ev["raw_init"]) if ev["raw_init"] else None
        if init == "init_syscall_trace":
            meta = ev["data"]
            if meta not in syscall_ok:
                return False                          # -ENOSYS: metadata not mapped
            S = "syscall_metadata"
            if self.m64(S, meta, "enter_event") == ev["addr"]:
                e = self.elf
                nb = self.m32(S, meta, "nb_args")
                args = [e.cstr(e.u64(self.m64(S, meta, "args") + 8 * i)) for i in range(nb)]
                fmt = '"' + "".join("%s: 0x%%0%dlx%s" % (a, 8, "" if i == nb - 1 else ", ")
                                    for i, a in enumerate(args)) + '"'
                fmt += "".join(", ((unsigned long)(REC->%s))" % a for a in args)
                key = ("syscall", meta)
            else:
                fmt, key = '"0x%lx", REC->ret', ("syscall", "exit")
            self.printfmt[key] = fmt
            ev["fmtkey"] = key
            ev["dynamic_id"] = True
        elif init in ("trace_event_raw_init",):
            ev["dynamic_id"] = True
        elif init is None:
            ev["dynamic_id"] = False                  # ftrace-internal: fixed type
            assert ev["type"] > 0 and ev["flags"] & FL_IGNORE_ENABLE, ev
        else:
            raise SystemExit("unknown raw_init %s for %s" % (init, ev["name"]))
        if "fmtkey" not in ev:
            ev["fmtkey"] = ev["fmtptr"]
            if ev["fmtptr"] not in self.printfmt:
                self.printfmt[ev["fmtptr"]] = self.elf.cstr(ev["fmtptr"])
        # the fields list head: per class, but per syscall for syscall enter events
        getf = self.m64("trace_event_class", ev["cls"], "get_fields")
        head = ("meta", ev["data"]) if getf else ev["cls"]
        if head not in self.fieldlists:
            self.fieldlists[head] = self.fields_array(ev)
        ev["head"] = head
        self.events.append(ev)
        return True

    def eval_maps(self, start, stop):
        e, M = self.elf, "trace_eval_map"
        maps = []
        for p in range(start, stop, 8):
            m = e.u64(p)
            maps.append((self.m64(M, m, "system"), e.cstr(self.m64(M, m, "eval_string")),
                         struct.unpack("<q", struct.pack("<Q", self.m64(M, m, "eval_value")))[0]))
        return maps

    def update_all(self, maps):
        """trace_event_update_all() over ftrace_events (newest first)."""
        for ev in reversed(self.events):
            updated = False
            for sysptr, s, v in maps:
                if sysptr != ev["sysptr"]:
                    continue
                self.printfmt[ev["fmtkey"]] = update_event_printk(self.printfmt[ev["fmtkey"]],
                                                                  s, v)
                for f in self.fieldlists[ev["head"]][0]:
                    f["type"] = update_field_type(f["type"], s, v)
                updated = True
            if not updated:
                for f in self.fieldlists[ev["head"]][0]:
                    f["type"] = update_field_type(f["type"], None, 0)


COMMON_FIELDS = [  # trace_define_common_fields(): struct trace_entry
    ["unsigned short", "common_type", 0, 2, 0],
    ["unsigned char", "common_flags", 2, 1, 0],
    ["unsigned char", "common_preempt_count", 3, 1, 0],
    ["int", "common_pid", 4, 4, 1],
]


def syscall_mapping(img):
    """init_ftrace_syscalls(): the syscall_metadata that sys_call_table entries map to."""
    e = img.elf
    metas = img.call_array(e.sym["__start_syscalls_metadata"], e.sym["__stop_syscalls_metadata"])
    mnames = [(m, e.cstr(img.m64("syscall_metadata", m, "name"))) for m in metas
              if img.m64("syscall_metadata", m, "name")]
    tab = e.sym["sys_call_table"]
    nr = next(s[2] for s in e.symbols if s[0] == "sys_call_table") // 8
    byaddr = {}
    for nm, value, size, info, shndx in e.symbols:
        if shndx and nm and info & 0xF == 2:
            byaddr.setdefault(value, []).append(nm)
    mapped = {}
    for i in range(nr):
        found = set()
        # kallsyms_lookup() gives one of the aliases; all of them must agree
        for sym in byaddr[e.u64(tab + 8 * i)]:
            if arch_syscall_match_sym_name(sym, "sys_ni_syscall"):
                found.add(None)
                continue
            found.add(next((m for m, name in mnames if arch_syscall_match_sym_name(sym, name)),
                           None))
        assert len(found) == 1, (i, found)
        m = found.pop()
        if m is not None:
            mapped[m] = i
    return mapped


def extract_image(img, start, stop, maps, syscall_ok=None):
    for call in img.call_array(start, stop):
        img.register(img.read_call(call), syscall_ok)
    img.update_all(maps)


# struct_name of each FTRACE_ENTRY() in kernel/trace/trace_entries.h, to look its size up
FTRACE_STRUCTS = {
    "function": "ftrace_entry", "funcgraph_entry": "ftrace_graph_ent_entry",
    "funcgraph_exit": "ftrace_graph_ret_entry", "context_switch": "ctx_switch_entry",
    "wakeup": "ctx_switch_entry", "kernel_stack": "stack_entry",
    "user_stack": "userstack_entry", "bprint": "bprint_entry", "print": "print_entry",
    "raw_data": "raw_data_entry", "bputs": "bputs_entry", "mmiotrace_rw": "trace_mmiotrace_rw",
    "mmiotrace_map": "trace_mmiotrace_map", "branch": "trace_branch", "hwlat": "hwlat_entry",
    "func_repeats": "func_repeats_entry", "osnoise": "osnoise_entry",
    "timerlat": "timerlat_entry",
}


CHECKED = [0]   # TRACE_EVENT records whose size was checked against BTF/DWARF


def records(img, sizes, problems):
    """The events of an image as output rows, with their record sizes checked."""
    classes = {}
    for nm, value, size, info, shndx in img.elf.symbols:
        if info & 0xF == 1 and nm.startswith("event_class_") and shndx:
            classes.setdefault(value, nm[len("event_class_"):])
    out = []
    for ev in img.events:
        fields, size = img.fieldlists[ev["head"]]
        end = max([TRACE_ENTRY_SIZE] + [f["offset"] + f["size"] for f in fields])
        if ev["system"] == "ftrace" and not ev["dynamic_id"]:
            btf = sizes.get(FTRACE_STRUCTS.get(ev["name"], "?"))
            # the C struct, or what the format shows when that is longer
            # (kernel_stack: caller[] is a flexible array in C, caller[8] in the format)
            size = max(btf or size, end)
        elif ev["system"] == "syscalls":
            # ftrace_syscall_enter()/exit() reserve the struct plus the arguments
            if isinstance(ev["head"], tuple):
                size = sizes["syscall_trace_enter"] + 8 * (len(fields) - 1)
            else:
                size = sizes["syscall_trace_exit"]
        else:
            tmpl = classes.get(ev["cls"])
            btf = sizes.get("trace_event_raw_%s" % tmpl)
            if btf is None:
                problems.append("no struct for %s/%s (class %s)" % (ev["system"], ev["name"],
                                                                    tmpl))
            else:
                CHECKED[0] += 1
            if btf is not None and btf != size:
                problems.append("size %s/%s: fields give %d, struct trace_event_raw_%s is %d"
                                % (ev["system"], ev["name"], size, tmpl, btf))
                size = btf
        if end > size:
            problems.append("fields of %s/%s end at %d > size %d" % (ev["system"], ev["name"],
                                                                      end, size))
        out.append([ev["system"], ev["name"],
                    [[f["type"], f["name"], f["offset"], f["size"], f["signed"], f["len"]]
                     for f in fields],
                    img.printfmt[ev["fmtkey"]], size,
                    ev["type"] if not ev["dynamic_id"] else None,
                    1 if ev["reg"] and not ev["flags"] & FL_IGNORE_ENABLE else 0])
    return out


def module_name(elf):
    s = elf.byname[".modinfo"]
    for item in bytes(elf.data[s["off"]:s["off"] + s["size"]]).split(b"\0"):
        if item.startswith(b"name="):
            return item[5:].decode()
    raise SystemExit("module without a name")


# ---------------------------------------------------------------- the build

# Modules in the catalogue, in the order a machine loads them (dependencies first).  Those
# marked True are the default machine's: what a Debian 12 desktop VM under QEMU/KVM with
# libvirt's defaults loads (q35 SATA CD-ROM, ext4 root, qemu-xhci tablet, virtio-gpu/qxl,
# ich9 HDA, KVM), plus xfs, which the simulated machine's BOOT_MODULES
# (fakefs/kernel/mm/alloc_boot.py) loads.  Modules with no events of their own (kvm_intel,
# overlay, bridge, ...) need no line.  The others can be loaded with modules-load=.
MODULES = [
    # (module, path under kernel/, loaded by default)
    ("scsi_mod", "drivers/scsi/scsi_mod.ko", True),          # sr_mod (SATA CD-ROM), sd_mod
    ("libata", "drivers/ata/libata.ko", True),               # ahci (q35 SATA controller)
    ("jbd2", "fs/jbd2/jbd2.ko", True),                       # ext4 root file system
    ("ext4", "fs/ext4/ext4.ko", True),
    ("xhci_hcd", "drivers/usb/host/xhci-hcd.ko", True),      # qemu-xhci, USB tablet
    ("drm", "drivers/gpu/drm/drm.ko", True),                 # virtio-gpu / qxl / bochs
    ("snd_hda_core", "sound/hda/snd-hda-core.ko", True),     # ich9-intel-hda sound
    ("snd_hda_codec", "sound/pci/hda/snd-hda-codec.ko", True),
    ("snd_hda_intel", "sound/pci/hda/snd-hda-intel.ko", True),
    ("kvm", "arch/x86/kvm/kvm.ko", True),                    # kvm_intel: no events of its own
    ("xfs", "fs/xfs/xfs.ko", True),                          # the simulated machine's xfs
    # not loaded by default
    ("nvme_core", "drivers/nvme/host/nvme-core.ko", False),
    ("btrfs", "fs/btrfs/btrfs.ko", False),
    ("sunrpc", "net/sunrpc/sunrpc.ko", False),
    ("auth_rpcgss", "net/sunrpc/auth_gss/auth_rpcgss.ko", False),
    ("nfs", "fs/nfs/nfs.ko", False),
    ("nfsv4", "fs/nfs/nfsv4.ko", False),
    ("cfg80211", "net/wireless/cfg80211.ko", False),
    ("mac80211", "net/mac80211/mac80211.ko", False),
    ("iwlwifi", "drivers/net/wireless/intel/iwlwifi/iwlwifi.ko", False),
    ("i915", "drivers/gpu/drm/i915/i915.ko", False),
]


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, **kw)


def fetch(cache):
    """apt-get download the dbg package (once) and extract vmlinux and the modules."""
    os.makedirs(cache, exist_ok=True)
    deb = os.path.join(cache, "%s_%s_amd64.deb" % (DBG_PKG, DEB_VERSION.replace(":", "%3a")))
    if not os.path.exists(deb):
        run(["apt-get", "download", "%s=%s" % (DBG_PKG, DEB_VERSION)], cwd=cache)
    root = os.path.join(cache, "dbg")
    members = [VMLINUX] + [MODDIR + path for _m, path, _d in MODULES]
    if not all(os.path.exists(os.path.join(root, m)) for m in members):
        os.makedirs(root, exist_ok=True)
        tar = subprocess.Popen(["dpkg-deb", "--fsys-tarfile", deb], stdout=subprocess.PIPE)
        run(["tar", "-x", "-C", root] + ["./" + m for m in members], stdin=tar.stdout)
        if tar.wait():
            raise SystemExit("dpkg-deb failed")
    return root


def build(root):
    problems = []
    vmlinux = os.path.join(root, VMLINUX)
    L = layouts(vmlinux)
    sizes = struct_sizes(vmlinux)
    L["sizeof"] = {"trace_event_fields": sizes["trace_event_fields"]}
    enum = subprocess.run(["pahole", "-E", "-C", "trace_type", vmlinux], check=True,
                          capture_output=True, text=True).stdout
    last_type = int(re.search(r"__TRACE_LAST_TYPE\s*=\s*(\d+)", enum).group(1))

    elf = Elf(vmlinux)
    img = Image(elf, L)
    ok = syscall_mapping(img)
    maps = img.eval_maps(elf.sym["__start_ftrace_eval_maps"], elf.sym["__stop_ftrace_eval_maps"])
    extract_image(img, elf.sym["__start_ftrace_events"], elf.sym["__stop_ftrace_events"], maps, ok)
    events = [["", *r] for r in records(img, sizes, problems)]
    modules = []
    for mod, path, default in MODULES:
        ko = os.path.join(root, MODDIR + path)
        melf = Elf(ko)
        assert module_name(melf) == mod, (module_name(melf), mod)
        mimg = Image(melf, L, mod)
        lo, hi = melf.section_range("_ftrace_events")
        elo, ehi = melf.section_range("_ftrace_eval_map")
        extract_image(mimg, lo, hi, mimg.eval_maps(elo, ehi))
        out = subprocess.run(["pahole", "-F", "dwarf", "-s", ko], check=True,
                             capture_output=True, text=True).stdout
        msizes = dict(sizes)
        for line in out.splitlines():
            p = line.split()
            if len(p) >= 2 and p[1].isdigit():
                msizes[p[0]] = int(p[1])
        rows = records(mimg, msizes, problems)
        events += [[mod, *r] for r in rows]
        modules.append([mod, default, len(rows)])
    return dict(
        version="6.12",
        kernel="Linux %s (Debian %s), %s" % (ABI, DEB_VERSION, DBG_PKG),
        trace_last_type=last_type,
        common_fields=COMMON_FIELDS,
        modules=modules,
        event_columns=["module", "system", "name", "fields", "print_fmt", "size", "fixed_id",
                       "listed"],
        field_columns=["type", "name", "offset", "size", "signed", "len"],
        events=events,
    ), problems


def encode(data):
    text = json.dumps(data, separators=(",", ":"), ensure_ascii=True)
    # one event a line, so that diffs of the uncompressed text stay readable
    text = text.replace(',["', ',\n["')
    return gzip.compress(text.encode() + b"\n", compresslevel=9, mtime=0)


def tool_parser(doc: str, data_file: str) -> argparse.ArgumentParser:
    """The options of a generator reading the dbg package: --cache, --out
    (``data_file`` in fakefs/kernel/trace/data/ by default), --check."""
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    ap.add_argument("--cache", default=os.path.expanduser("~/.cache/fakefs/mkevents"))
    ap.add_argument("--out", default=os.path.join(here, "..", "fakefs", "kernel", "trace",
                                                   "data", data_file))
    ap.add_argument("--check", action="store_true",
                    help="compare with --out instead of writing it")
    return ap


def main(argv=None):
    args = tool_parser(__doc__, "events-6.12.gz").parse_args(argv)
    t0 = time.time()
    root = fetch(args.cache)
    data, problems = build(root)
    for p in problems:
        print("warning:", p, file=sys.stderr)
    blob = encode(data)
    ev = data["events"]
    print("%d events (%d in vmlinux), %d systems, %d modules, %d bytes, %.0f s; %d record"
          " sizes checked against the kernel's structs, %d problems"
          % (len(ev), sum(1 for e in ev if not e[0]), len({e[1] for e in ev}),
             len(data["modules"]), len(blob), time.time() - t0, CHECKED[0], len(problems)),
          file=sys.stderr)
    if args.check:
        with open(args.out, "rb") as fh:
            same = fh.read() == blob
        print("same as %s" % args.out if same else "DIFFERS from %s" % args.out,
              file=sys.stderr)
        return 0 if same else 1
    with open(args.out, "wb") as fh:
        fh.write(blob)
    return 0


if __name__ == "__main__":
    sys.exit(main())
