"""Memory allocation profiling (lib/alloc_tag.c, include/linux/alloc_tag.h,
include/linux/pgalloc_tag.h and the ``current->alloc_tag`` helpers).

Every allocation call site of the simulated kernel is an :class:`AllocTag`
holding two live counters, bytes and calls.  The table of sites comes from
``data/alloc_tags-<version>.tsv`` (real call sites of that kernel, in link
order; see ``data/mkalloctags.py``).  The allocators charge a tag through
``alloc_hooks()``: the hook makes a tag *current* for the duration of the
call, so nested hooks win over outer ones, and ``_noprof`` helpers (plain
calls without a hook) charge whatever tag their caller made current.  Each
allocated object remembers the tag it was charged to (its ``ref``), and
freeing it subtracts from that tag: the counters are live quantities.

The accounting is guarded by the ``mem_alloc_profiling_key`` static key
(:attr:`AllocTagging.enabled`); while it is off nothing is added or
subtracted, so re-enabling resumes from frozen values.  ``never`` (or a
``=n`` ENABLED_BY_DEFAULT build) removes support altogether: no page
extension to hold page references, the sysctl read-only, and on 6.13 and
later no /proc/allocinfo at all.

Files: ``/proc/allocinfo`` (0400, here) and ``/proc/sys/vm/mem_profiling``
(:mod:`.mem_profiling`, with the boot parameter and the differences between
kernel versions).  Loading and unloading modules, with their tags:
:mod:`.alloc_tag_module`.

This module is the single initcall of the allocation model: ``alloc_tag_init``
sets up tags, sysctl and procfs; ``alloc_boot_init``
(:mod:`fakefs.kernel.mm.alloc_boot`) then brings up the simulated
allocators and replays boot on them; the machine's allocations at run time
are :mod:`fakefs.sim.alloc_workload`'s.
"""

from __future__ import annotations

import errno
import os

from ..fs.pseudo import FileOperations, KernelError
from ..fs.proc.base import proc_create, proc_remove
from ..fs.proc.inode import ProcOps
from ..panic import warn_report
from ..owed import Settle
from ..printk import KERN_ERR, KERN_INFO, KERN_NOTICE
from .codetag import CODETAG_FLAG_INACCURATE, CodeTag, codetag_register_type
from .mem_profiling import (U64, V_COMPRESSED, V_FORMAT_2, V_SYSCTL_REWORK, setup_early_mem_profiling,
                            sysctl_init)

DATA_DIR = os.path.join(os.path.dirname(__file__), "data")

ALLOCINFO_HEADER_1 = "allocinfo - version: 1.0\n#     <size>  <calls> <tag info>\n"
ALLOCINFO_HEADER_2 = "allocinfo - version: 2.0\n#     <size>  <calls> <tag info>\n"

# header lines of the WARN()s the model can hit (6.12 line numbers)
WARN_ALLOC_TAG_H = "include/linux/alloc_tag.h"
WARN_LINE_NOT_CLEARED = 128
WARN_LINE_TAG_NOT_SET = 132
WARN_LINE_NOT_SET = 137
WARN_SCHED_H_CHANGED = ("include/linux/sched.h", 2237)
WARN_MODULE_UNLOAD = ("lib/alloc_tag.c", 169)


class _Empty:
    """``CODETAG_EMPTY``: a reference deliberately left without a tag."""

    __slots__ = ()

    def __repr__(self):
        return "CODETAG_EMPTY"


CODETAG_EMPTY = _Empty()


class AllocTag(CodeTag):
    """``struct alloc_tag``: a code tag plus its live counters.

    ``callee`` is the allocator the call site invokes (``kmalloc``,
    ``alloc_pages`` ...), which the workload uses to pick sizes."""

    __slots__ = ("bytes", "calls", "callee")

    def __init__(self, filename, lineno, function, modname=None, callee=""):
        super().__init__(filename, lineno, function, modname)
        self.bytes = 0
        self.calls = 0
        self.callee = callee


# ---------------------------------------------------------------------------
# the call-site table

_TABLES: dict[str, tuple[list, dict]] = {}


def table_version(version: tuple) -> str:
    """The table shipped for a kernel version (the nearest one not newer)."""
    avail = sorted(
        tuple(int(x) for x in fn[len("alloc_tags-"):-len(".tsv")].split("."))
        for fn in os.listdir(DATA_DIR) if fn.startswith("alloc_tags-") and fn.endswith(".tsv"))
    best = avail[0]
    for v in avail:
        if v <= tuple(version[:2]):
            best = v
    return ".".join(str(x) for x in best)


def load_tag_table(version: tuple = (6, 12)):
    """Rows of the call-site table: (builtin rows, {module: rows}).
    A row is (file, line, function, callee); parsed once per process."""
    key = table_version(version)
    cached = _TABLES.get(key)
    if cached is not None:
        return cached
    builtin: list = []
    modules: dict[str, list] = {}
    # one string object for each value (5,147 rows name 1,604 files and 124
    # callees; split() makes a new string each time: ~0.6 MB of duplicates)
    one = {}.setdefault
    with open(os.path.join(DATA_DIR, "alloc_tags-%s.tsv" % key)) as fh:
        for line in fh:
            parts = line.rstrip("\n").split("\t")
            if len(parts) < 4:
                continue
            callee = parts[4] if len(parts) > 4 else ""
            row = (one(parts[0], parts[0]), int(parts[1]), one(parts[2], parts[2]),
                   one(callee, callee))
            if parts[3]:
                modules.setdefault(parts[3], []).append(row)
            else:
                builtin.append(row)
    _TABLES[key] = (builtin, modules)
    return _TABLES[key]


def make_tags(rows, modname: str | None = None) -> list[AllocTag]:
    return [AllocTag(f, line, func, modname, callee) for f, line, func, callee in rows]


# ---------------------------------------------------------------------------
# helpers


def string_get_size(size: int, blk_size: int = 1, units_2: bool = True) -> str:
    """``string_get_size(size, blk, STRING_UNITS_2 or _10)``: '38.4 MiB'."""
    names = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei", "Zi", "Yi"] if units_2 else \
        ["", "k", "M", "G", "T", "P", "E", "Z", "Y"]
    div = 1024 if units_2 else 1000
    size &= U64
    i = 0
    remainder = 0
    tmp = ""
    if blk_size == 0:
        size = 0
    if size:
        while blk_size >> 32:
            blk_size //= div
            i += 1
        while size >> 32:
            size //= div
            i += 1
        size *= blk_size
        while size >= div:
            remainder = size % div
            size //= div
            i += 1
        sf_cap = size
        j = 0
        while sf_cap * 10 < 1000:
            sf_cap *= 10
            j += 1
        if units_2:
            remainder = (remainder * 1000) >> 10
        remainder += (500, 50, 5)[j]
        if remainder >= 1000:
            remainder -= 1000
            size += 1
        if j:
            tmp = (".%03u" % remainder)[:j + 1]
    unit = names[i] if i < len(names) else "UNK"
    return "%u%s %sB" % (size & 0xFFFFFFFF, tmp, unit)


def nr_unused_pageflag_bits(config, nr_cpus: int) -> int:
    """``NR_UNUSED_PAGEFLAG_BITS`` for an x86-64 build of this config: the
    page->flags bits left once the page flags, zone, node, last_cpupid and
    LRU generation fields are laid out."""
    nr_pageflags = 23
    zones = 2
    nodes = int(config["CONFIG_NODES_SHIFT"] or (6 if config.enabled("NUMA") else 0))
    lru = (3 + 2) if config.enabled("LRU_GEN") else 0
    used = nr_pageflags + zones + nodes + lru
    if config.enabled("NUMA_BALANCING"):
        cpu_bits = max(1, (int(config["CONFIG_NR_CPUS"] or nr_cpus) - 1).bit_length())
        last_cpupid = 8 + cpu_bits
        if used + last_cpupid <= 64:
            used += last_cpupid
    return max(0, 64 - used)


# ---------------------------------------------------------------------------
# the subsystem


class AllocTagging:
    """State of lib/alloc_tag.c for one simulated kernel (``kernel.alloc_tag``).

    Allocators call :meth:`add` / :meth:`sub` with an object that has a
    ``ref`` attribute (its ``union codetag_ref``); the hooks are only
    called while :attr:`enabled`, as the kernel's static branch does.
    """

    def __init__(self, kernel):
        self.kernel = kernel
        cfg = kernel.config
        self.version = tuple(cfg.version[:2])
        self.configured = cfg.enabled("MEM_ALLOC_PROFILING")
        self.debug = self.configured and cfg.enabled("MEM_ALLOC_PROFILING_DEBUG")
        # DEBUG selects ENABLED_BY_DEFAULT
        self.default_on = self.configured and (
            cfg.enabled("MEM_ALLOC_PROFILING_ENABLED_BY_DEFAULT") or self.debug)
        self.support = self.default_on          # mem_profiling_support
        self.enabled = self.default_on          # mem_alloc_profiling_key
        self.compressed = False                 # mem_profiling_compressed key
        self.boot_param: str | None = None      # value of sysctl.vm.mem_profiling=
        self.current: AllocTag | None = None    # current->alloc_tag
        self.cttype = None
        self.allocinfo = None                   # the /proc/allocinfo node
        self.sysctl_nodes: dict = {}
        self.modules: dict[str, list] = {}      # loaded module -> its tags
        self._index: dict = {}
        self._warned: set = set()
        self.warn_task = ("swapper/0", 0, 0)    # (comm, pid, cpu) shown by WARN splats
        self.warn_trace: tuple = ()             # callers shown under the WARN
        self.warn_count = 0
        # bring the machine's allocations up to the present before their
        # state is seen or changed (the workload's owed time): at.settle()
        self.settle = Settle()

    # --- current->alloc_tag ---------------------------------------------------
    def alloc_hooks(self, tag, fn, *args):
        """``alloc_hooks_tag(tag, fn(args))``: run ``fn`` with ``tag`` current."""
        old = self.current
        self.current = tag
        try:
            return fn(*args)
        finally:
            if self.debug and self.current is not tag:
                self._warn_splat(WARN_SCHED_H_CHANGED, "alloc_tag_restore",
                                 "current->alloc_tag was changed:\n", once=False)
            self.current = old

    # --- accounting -----------------------------------------------------------
    def add(self, obj, tag, nbytes: int, ncalls: int = 1) -> bool:
        """``alloc_tag_add(&obj->ref, tag, bytes)``."""
        if self.debug:
            ref = obj.ref
            if ref is not None and ref is not CODETAG_EMPTY:
                self.warn_once(WARN_LINE_NOT_CLEARED, "alloc_tag was not cleared (got tag for %s:%u)\n"
                               % (ref.filename, ref.lineno))
            if tag is None:
                self.warn_once(WARN_LINE_TAG_NOT_SET, "current->alloc_tag not set\n")
        if tag is None:
            return False
        obj.ref = tag
        tag.calls += ncalls
        tag.bytes += nbytes
        return True

    def sub(self, obj, nbytes: int, ncalls: int = 1) -> None:
        """``alloc_tag_sub(&obj->ref, bytes)``."""
        ref = obj.ref
        if ref is None:
            if self.debug:
                self.warn_once(WARN_LINE_NOT_SET, "alloc_tag was not set\n")
            return
        obj.ref = None
        if ref is CODETAG_EMPTY:
            return
        ref.bytes -= nbytes
        ref.calls -= ncalls

    def ref_split(self, obj, tag, ncalls: int = 1) -> None:
        """``alloc_tag_ref_set``: a new reference (page split) counts a call."""
        obj.ref = tag
        tag.calls += ncalls

    def set_empty(self, obj) -> None:
        """``set_codetag_empty``: no tag on purpose (only matters for DEBUG)."""
        obj.ref = CODETAG_EMPTY if self.debug else None

    def set_inaccurate(self, tag) -> None:
        """``alloc_tag_set_inaccurate`` (the flag only shows from 6.18 on)."""
        if tag is not None:
            tag.flags |= CODETAG_FLAG_INACCURATE

    @property
    def page_refs(self) -> bool:
        """Whether pages can carry a tag reference: page_ext is allocated for
        tagging when profiling is supported, or references live in the page
        flags when compressed."""
        return self.support

    # --- tags -----------------------------------------------------------------
    def iter_tags(self):
        return iter(self.cttype) if self.cttype is not None else iter(())

    def find(self, filename: str, function: str | None = None, lineno: int | None = None,
             modname: str | None = None) -> AllocTag:
        """A tag by file (+ function, + line); KeyError if the kernel has none."""
        if modname:
            tags = self.modules.get(modname)
            if tags is None:
                raise KeyError("module %s not loaded" % modname)
            cands = [t for t in tags if t.filename == filename and
                     (function is None or t.function == function)]
        else:
            cands = self._index.get((filename, function)) if function else \
                [t for (f, _fn), ts in self._index.items() if f == filename for t in ts]
            cands = list(cands or [])
        if lineno is not None:
            cands = [t for t in cands if t.lineno == lineno]
        if not cands:
            raise KeyError("%s %s%s" % (filename, function or "",
                                        "" if lineno is None else ":%d" % lineno))
        return cands[-1] if lineno is None else cands[0]

    def find_all(self, filename: str, function: str) -> list:
        return list(self._index.get((filename, function), ()))

    # --- output ---------------------------------------------------------------
    def allocinfo_text(self) -> str:
        self.settle()
        header = ALLOCINFO_HEADER_2 if self.version >= V_FORMAT_2 else ALLOCINFO_HEADER_1
        v2 = self.version >= V_FORMAT_2
        out = [header]
        append = out.append
        for t in self.iter_tags():
            b = t.bytes
            c = t.calls
            if c < 0:
                c &= U64
            if v2 and t.flags & CODETAG_FLAG_INACCURATE:
                append("%12d %8d %s accurate:no \n" % (b, c, t.text))
            else:
                append("%12d %8d %s \n" % (b, c, t.text))
        return "".join(out)

    def top_users(self, count: int = 10) -> list:
        """``alloc_tag_top_users``: the tags with most bytes, ties in list order."""
        self.settle()
        tops: list = []
        for t in self.iter_tags():
            b = t.bytes
            i = 0
            while i < len(tops) and not b > tops[i][0]:
                i += 1
            if i < count:
                tops.insert(i, (b, t))
                if len(tops) > count:
                    tops.pop()
        return [t for _b, t in tops]

    def show_mem_lines(self) -> list[str]:
        """The allocation part of ``show_mem()`` (OOM reports, sysrq-m)."""
        tops = self.top_users(10)
        if not tops:
            return []
        if self.version >= V_FORMAT_2:
            lines = ["Memory allocations (profiling is currently turned %s):"
                     % ("on" if self.enabled else "off")]
        else:
            lines = ["Memory allocations:"]
        for t in tops:
            size = string_get_size(t.bytes)[:9]
            calls = t.calls & U64
            if t.modname:
                lines.append("%12s %8d %s:%u [%s] func:%s" % (size, calls, t.filename, t.lineno,
                                                             t.modname, t.function))
            else:
                lines.append("%12s %8d %s:%u func:%s" % (size, calls, t.filename, t.lineno, t.function))
        return lines

    def show_mem(self) -> None:
        for line in self.show_mem_lines():
            self.kernel.printk(line, KERN_NOTICE)

    # --- WARN -----------------------------------------------------------------
    def warn_once(self, line: int, msg: str, where: str = WARN_ALLOC_TAG_H) -> None:
        key = (where, line)
        if key in self._warned:
            return
        self._warned.add(key)
        self._warn_splat((where, line), None, msg, once=True)

    def _warn_splat(self, at, func, msg: str, once: bool) -> None:
        """A ``WARN()`` report in the kernel log, from the context set in
        :attr:`warn_task` / :attr:`warn_trace` by whoever runs the code."""
        sym = func or _WARN_SYMS.get(at[1], _WARN_SYMS[WARN_LINE_TAG_NOT_SET])
        self.warn_count += 1
        modules = [m + ("(C)" if m == "ctagmod" else "") for m in reversed(list(self.modules))]
        warn_report(self.kernel, at, sym, msg, self.warn_task, self.warn_trace, modules)


_WARN_SYMS = {
    WARN_LINE_NOT_CLEARED: "__kmalloc_cache_noprof+0x2b4/0x390",
    WARN_LINE_TAG_NOT_SET: "__kmalloc_cache_noprof+0x2b4/0x390",
    WARN_LINE_NOT_SET: "kfree+0x2a6/0x3b0",
}


# ---------------------------------------------------------------------------
# boot parameter (parsed in mem_profiling)


def register_params(kernel) -> None:
    """Attach ``kernel.alloc_tag`` (when the build has profiling) and claim
    the ``sysctl.vm.mem_profiling=`` early parameter."""
    at = AllocTagging(kernel)
    if not at.configured:
        return
    kernel.alloc_tag = at

    def handler(val):
        if setup_early_mem_profiling(at, val) != 0:
            kernel.log.pr_warn("Malformed early option 'sysctl.vm.mem_profiling'")

    kernel.early_param("sysctl.vm.mem_profiling", handler)


# ---------------------------------------------------------------------------
# /proc/allocinfo


class AllocinfoOps(ProcOps):
    """``/proc/allocinfo``: seq_file over every tag; no write handler (EIO)."""

    def __init__(self, at: AllocTagging):
        self.at = at

    def show(self, f):
        return self.at.allocinfo_text()

    def owed(self, f, off):
        return self.at.settle if off == 0 else None     # (further on: the text made at 0)


def procfs_init(at: AllocTagging) -> None:
    at.allocinfo = proc_create(at.kernel, "allocinfo", 0o400, None, AllocinfoOps(at), at)


def shutdown_mem_profiling(at: AllocTagging, remove_file: bool) -> None:
    """Turn profiling off for good (a compression failure, 6.13+)."""
    at.enabled = False
    if not at.support:
        return
    if remove_file and at.allocinfo is not None:
        proc_remove(at.kernel, at.allocinfo)
        at.allocinfo = None
    at.support = False


# ---------------------------------------------------------------------------
# module unload (loading and unloading: alloc_tag_module)


def _module_unload_check(at: AllocTagging):
    def check(cttype, cmod) -> bool:
        unused = True
        for t in cmod.tags:
            if t.bytes:
                unused = False
                msg = "%s:%u module %s func:%s has %d allocated at module unload" % (
                    t.filename, t.lineno, t.modname, t.function, t.bytes & U64)
                if at.version >= V_COMPRESSED:
                    at.kernel.printk(msg, KERN_INFO)
                else:
                    at._warn_splat(WARN_MODULE_UNLOAD, "alloc_tag_module_unload+0x134/0x150",
                                   msg, once=False)
        return unused
    return check


# ---------------------------------------------------------------------------
# init


def alloc_tag_init(kernel) -> None:
    """module_init(alloc_tag_init): tag type, sysctl, procfs; then the
    simulated allocators replay boot and start their workload."""
    at: AllocTagging | None = kernel.alloc_tag
    if at is None:
        if not kernel.config.enabled("MEM_ALLOC_PROFILING"):
            return
        register_params(kernel)
        at = kernel.alloc_tag
    builtin_rows, _mods = load_tag_table(at.version)
    builtin = make_tags(builtin_rows)
    index: dict = {}
    for t in builtin:
        index.setdefault((t.filename, t.function), []).append(t)
    at._index = index

    if at.compressed and at.support:
        bits = nr_unused_pageflag_bits(kernel.config, kernel.nr_cpus)
        if len(builtin) > (1 << bits):
            shutdown_mem_profiling(at, False)
            kernel.printk("%d allocation tags cannot be references using %d available page flag bits. "
                          "Memory allocation profiling is disabled!" % (len(builtin), bits), KERN_ERR)

    if at.version < V_COMPRESSED or at.support:
        at.cttype = codetag_register_type("alloc_tags", builtin,
                                          module_unload=_module_unload_check(at))
    sysctl_init(at)
    if at.version < V_COMPRESSED:
        procfs_init(at)
    elif not at.support:
        if at.version >= V_SYSCTL_REWORK:
            kernel.printk("Memory allocation profiling is not supported!", KERN_INFO)
    else:
        procfs_init(at)

    # alloc_boot.alloc_boot_init goes on from here
