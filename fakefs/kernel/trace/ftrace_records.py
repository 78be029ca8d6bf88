"""The dyn_ftrace records of kernel/trace/ftrace.c and how a glob picks them.

* The records (``struct dyn_ftrace``): every traceable function of the
  symbol table, in address order, module functions after the core ones —
  what ``available_filter_functions`` lists.  Not traceable: padding
  symbols, init text (freed after boot), the entry, noinstr and cpuidle
  text, static-call trampolines and thunks, and whatever the workload's
  call graph marks ``%notrace``.
  The ``[__builtin__ftrace]`` and ``[bpf]`` symbols of kallsyms are
  trampolines and BPF programs, not modules: no records.
* The globs of the filter files (``filter_parse_regex()``, ``struct
  ftrace_glob``, ``ftrace_match()``) and ``match_records()``: a function
  name, a ``*`` glob, a record index or a ``:mod:`` module pattern.
* The record pages ``dyn_ftrace_total_info`` counts (``dyn_info()``).
  ``ftrace_process_locs()`` gets the core kernel's records at boot (the
  traceable functions above plus those of the init text) and
  ``ftrace_allocate_pages()`` puts them in groups: each group is one
  ``__get_free_pages()`` block of order ``fls(pages) - 1`` where ``pages``
  is what the records still to place need (``DIV_ROUND_UP(count *
  ENTRY_SIZE, PAGE_SIZE)``), so the largest power of two that they fill
  completely, except the last, which takes what remains; on x86-64
  ``sizeof(struct dyn_ftrace)`` is 16 (``ip``, ``flags``; ``struct
  dyn_arch_ftrace`` is empty): 256 records a page.  The records are placed
  in address order, group after group.  ``ftrace_free_init_mem()`` then
  drops the init text's records (``ftrace_update_tot_cnt`` goes down by
  one each) and frees every group left empty (pages and groups go down);
  those records are the highest core addresses, so they empty the last
  groups.  Each module gets its own groups the same way.  The model has no
  ``__mcount_loc`` entries that the kernel would skip (zeroed weak
  functions): no group is allocated for them.  E.g. 50000 records: 196
  pages are needed, a group of 128 pages (32768 records), then of 64
  (16384), then 848 records need 4 pages: 196 pages in 3 groups.
"""

from __future__ import annotations

import re
from array import array
from bisect import bisect_left, bisect_right
from heapq import merge
from itertools import chain, groupby, islice, repeat

from ..lib.glob import glob_regex
from ..module import module_traceable
from .ftrace_index import NameIndex
from ..lib.kstrtox import kstrtoul
from ..walkgraph import FENTRY_IP

# filter_parse_regex() types
MATCH_FULL, MATCH_FRONT_ONLY, MATCH_MIDDLE_ONLY, MATCH_END_ONLY, MATCH_GLOB, MATCH_INDEX = range(6)

# symbols that are text but never ftrace records
_SKIP_PREFIXES = ("__pfx_", "__cfi_", "__pi_", "__SCT__", "__x86_indirect_", "__x86_return_thunk",
                  "srso_", "retbleed_")
# kallsyms' pseudo-modules (ftrace trampolines, BPF programs)
_PSEUDO_MODULES = ("__builtin__ftrace", "bpf")
PAGE_SIZE = 4096
ENTRY_SIZE = 16                        # sizeof(struct dyn_ftrace) on x86-64
_SKIP_RANGES = (("__entry_text_start", "__entry_text_end"),
                ("__noinstr_text_start", "__noinstr_text_end"),
                ("__cpuidle_text_start", "__cpuidle_text_end"),
                ("__static_call_text_start", "_etext"),
                ("_sinittext", "_einittext"))


# --------------------------------------------------------------- matching
_GLOB_CHARS = re.compile(r"[*?[\\]")


def filter_parse_regex(buff: str):
    """(type, search, not) the way ``filter_parse_regex()`` reads a glob."""
    neg = buff.startswith("!")
    if neg:
        buff = buff[1:]
    if "0" <= buff[:1] <= "9":
        return MATCH_INDEX, buff, neg
    if _GLOB_CHARS.search(buff) is None:
        return MATCH_FULL, buff, neg
    typ = MATCH_FULL
    n = len(buff)
    for i, ch in enumerate(buff):
        if ch == "*":
            if i == 0:
                typ = MATCH_END_ONLY
            elif i == n - 1:
                typ = MATCH_MIDDLE_ONLY if typ == MATCH_END_ONLY else MATCH_FRONT_ONLY
                buff = buff[:i]
                break
            else:
                return MATCH_GLOB, buff, neg
        elif ch in "[?\\":
            return MATCH_GLOB, buff, neg
    if buff.startswith("*"):
        buff = buff[1:]
    return typ, buff, neg


KNOWN_MAX = 4096


class AddrIndex:
    """The record of an address (``lookup_rec()``: the kernel bisects its
    sorted record pages): a mapping of record addresses to indexes, held as
    the sorted addresses (and, where the records are not in address order,
    the permutation) rather than a dict of ~55k Python ints."""

    __slots__ = ("_sorted", "_order", "_known")

    def __init__(self, addrs):
        # the addresses asked for lately (the armed kprobes' functions are
        # looked up at every change of the ops), a few thousand at most
        self._known: dict[int, int | None] = {}
        if all(x < y for x, y in zip(addrs, islice(addrs, 1, None))):
            self._sorted, self._order = addrs, None
        else:
            order = sorted(range(len(addrs)), key=addrs.__getitem__)
            self._sorted = array("Q", (addrs[i] for i in order))
            self._order = array("L", order)

    def get(self, addr: int, default=None):
        if type(addr) is not int:
            return default
        known = self._known
        r = known.get(addr, -1)
        if r == -1:
            s = self._sorted
            i = bisect_left(s, addr)
            r = (i if self._order is None else self._order[i]) if i < len(s) and s[i] == addr \
                else None
            if len(known) >= KNOWN_MAX:
                known.clear()
            known[addr] = r
        return default if r is None else r

    def __contains__(self, addr) -> bool:
        return self.get(addr) is not None

    def __getitem__(self, addr: int) -> int:
        i = self.get(addr)
        if i is None:
            raise KeyError(addr)
        return i


class Glob:
    """``struct ftrace_glob``: a parsed pattern and ``ftrace_match()``."""

    __slots__ = ("type", "search", "_re")

    def __init__(self, typ, search):
        self.type = typ
        self.search = search
        self._re = None

    def __len__(self):
        return len(self.search)

    def match(self, s: str) -> bool:
        t = self.type
        if t == MATCH_FULL:
            return s == self.search
        if t == MATCH_FRONT_ONLY:
            return s.startswith(self.search)
        if t == MATCH_MIDDLE_ONLY:
            return self.search in s
        if t == MATCH_END_ONLY:
            return s.endswith(self.search)
        if t == MATCH_GLOB:
            if self._re is None:
                self._re = glob_regex(self.search)
            return self._re.fullmatch(s) is not None
        return False


# --------------------------------------------------------------- records
class RecordNames:
    """The records' names, read from the symbol table where they are held
    (``kallsyms.NameTable``): a list of ~55,000 strings would be 4 MB.
    ``at[i]``: record ``i``'s place among vmlinux's symbols, -1 for a
    module's record (its name in ``module_names``)."""

    __slots__ = ("_table", "_at", "module_names")

    def __init__(self, ks, at, module_names: dict[int, str]):
        self._table = ks.core_names()
        self._at = at
        self.module_names = module_names

    def __len__(self) -> int:
        return len(self._at)

    def __getitem__(self, i: int) -> str:
        p = self._at[i]
        return self._table[p] if p >= 0 else self.module_names[i if i >= 0 else i + len(self._at)]

    def __iter__(self):
        table, mods = self._table, self.module_names
        for i, p in enumerate(self._at):
            yield table[p] if p >= 0 else mods[i]


class RecordMods:
    """Each record's module (None for the core kernel's), read like a list:
    the core records come first, so only the modules' records hold a name
    (a list of ~55,000 Nones was 430 KB)."""

    __slots__ = ("_ncore", "names")

    def __init__(self, ncore: int, names: list):
        self._ncore = ncore
        self.names = names              # the module records' modules, in record order

    def __len__(self) -> int:
        return self._ncore + len(self.names)

    def __getitem__(self, i: int):
        n = len(self)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError(i)
        return None if i < self._ncore else self.names[i - self._ncore]

    def __iter__(self):
        return chain(repeat(None, self._ncore), self.names)


def notrace_names(kernel) -> frozenset:
    """The symbols of what the workload's call graph marks ``%notrace``."""
    ks = kernel.kallsyms
    out = set()
    wl = kernel.workload
    if wl is not None:
        for tok in wl.graph.notrace:
            for alt in tok.split("|"):
                name = ks.resolve(alt)
                if name is not None:
                    out.add(name)
    return frozenset(out)


def untraceable_bounds(ks) -> list:
    """The untraceable ranges of the core text (``_SKIP_RANGES`` present in
    ``ks``), merged, as a flat list of bounds: an address inside one
    bisects to an odd place."""
    spans = []
    for lo, hi in _SKIP_RANGES:
        a, b = ks.addr_of(lo), ks.addr_of(hi)
        if a is not None and b is not None and a < b:
            spans.append([a, b])
    spans.sort()
    merged: list = []
    for a, b in spans:
        if merged and a <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    return [x for span in merged for x in span]


_MARKERS = frozenset(("_stext", "_text", "_etext", "_sinittext", "_einittext"))


def _no_record(name: str, notrace: frozenset) -> bool:
    """A text symbol that is no record whatever its address: padding,
    thunks, section markers, ``%notrace``, and ``foo.cold`` (the unlikely
    part gcc splits off a function, entered by a jump, with no __fentry__
    call of its own)."""
    return (name.startswith(_SKIP_PREFIXES) or name in _MARKERS or name in notrace
            or name.endswith(("_text_start", "_text_end")) or ".cold" in name)

# the core scans made (``_core_scan``): a few tables' (the bundled one's,
# the host's), each with its notrace set
_CORE_SCANS: dict = {}
_CORE_SCANS_MAX = 4


def _core_scan(base, names, notrace: frozenset, bounds: tuple, init_lo: int,
               init_hi: int) -> tuple:
    """(the places in the table of the core kernel's records, those of the
    init text's symbols) for the table of addresses ``base`` and
    ``names``, in the table's own addresses (``bounds``: the untraceable
    ranges, ``init_lo``-``init_hi`` the init text): what does not depend
    on where the table is relocated, made once per table and notrace set
    (each kernel in a process shares the bundled table: ~0.2 s a boot).
    The table is in address order, so the records come in it (aliases:
    the first); names skipped as the class's doc says."""
    key = (id(base), notrace, bounds, init_lo, init_hi)
    got = _CORE_SCANS.get(key)
    if got is not None and got[0] is base:          # (the id of a live table)
        return got[1], got[2]
    at: list[int] = []
    init_at: list[int] = []
    prev = None
    for pos, (addr, name) in enumerate(zip(base, names)):
        if _no_record(name, notrace):
            continue
        if bisect_right(bounds, addr) & 1:
            if init_lo <= addr < init_hi:
                init_at.append(pos)
            continue
        if addr == prev:                            # aliases share one record
            continue
        prev = addr
        at.append(pos)
    if len(_CORE_SCANS) >= _CORE_SCANS_MAX:
        _CORE_SCANS.clear()
    got = _CORE_SCANS[key] = (base, tuple(at), tuple(init_at))
    return got[1], got[2]


class FtraceRecords:
    """The dyn_ftrace records of the running kernel (one per kernel).

    Record ``r`` of the core kernel is symbol ``names._at[r]`` of the table,
    and those places increase with ``r`` (both in address order): a name's
    records are found by bisecting them (``named``), with no table of the
    symbols' records."""

    def __init__(self, kernel):
        ks = kernel.kallsyms
        notrace = notrace_names(kernel)
        base, shift, names = ks.core_table()
        # (in the table's own addresses: the scan is the same for every
        # relocation of it, ``_core_scan``)
        bounds = tuple(x - shift for x in untraceable_bounds(ks))     # inside: odd bisect
        init_lo, init_hi = ks.addr_of("_sinittext"), ks.addr_of("_einittext")
        init = ((init_lo - shift, init_hi - shift)
                if init_lo is not None and init_hi is not None else (0, 0))
        at, init_at = _core_scan(base, names, notrace, bounds, *init)
        # records until init memory is freed
        init_addrs = {base[pos] + shift for pos in init_at}
        at = array("i", at)                      # a record's place in the symbol table
        addrs = array("Q", [base[pos] + shift for pos in at])
        modrecs = []
        for addr, _typ, name, mod in ks.module_symbols():
            if (_no_record(name, notrace) or mod in _PSEUDO_MODULES
                    or not module_traceable(kernel, mod, addr)):
                continue
            modrecs.append((addr, name, mod))
        mod_names: dict[int, str] = {}           # a module record's name
        mods: list[str] = []
        self._ncore = ncore = len(at)
        seen = set()
        for addr, name, mod in modrecs:
            i = bisect_left(addrs, addr, 0, ncore)              # (one record an address)
            if addr in seen or i < ncore and addrs[i] == addr:
                continue
            seen.add(addr)
            mod_names[len(at)] = name
            at.append(-1)
            mods.append(mod)
            addrs.append(addr)
        self.names = RecordNames(ks, at, mod_names)
        self.mods = RecordMods(ncore, mods)
        self.modules = frozenset(m for m in mods if m)
        self.addrs = addrs
        self.by_addr = AddrIndex(self.addrs)
        self._ks = ks
        self._init_addrs = init_addrs
        self._dyn_info = None
        self.ops_list = None              # ftrace_ops_list.FtraceOpsList, made on first use
        self._ip_cache: dict[int, int | None] = {}
        self._avail = None
        self._avail_addrs = None
        self._index = None

    def __len__(self):
        return len(self.names)

    @property
    def index(self) -> NameIndex:
        """The names indexed for the globs (made on first use)."""
        if self._index is None:
            self._index = NameIndex(self.names)
        return self._index

    def named(self, name: str) -> list[int]:
        """The records of the functions called ``name`` (in record order)."""
        at, n = self.names._at, self._ncore
        out = []
        for p in self._ks.core_names().positions(name):
            r = bisect_left(at, p, 0, n)
            if r < n and at[r] == p:
                out.append(r)
        out.extend(r for r, n in self.names.module_names.items() if n == name)
        return out

    def display(self, i: int) -> str:
        """``%ps`` of a record: ``name`` or ``name [module]``."""
        m = self.mods[i]
        return self.names[i] if m is None else "%s [%s]" % (self.names[i], m)

    def ip(self, i: int) -> int:
        """The record's ip: the ``__fentry__`` call after ``endbr64``."""
        return self.addrs[i] + FENTRY_IP

    def dyn_info(self) -> tuple[int, int, int]:
        """(``ftrace_update_tot_cnt``, ``ftrace_number_of_pages``,
        ``ftrace_number_of_groups``) after boot (see the module's doc)."""
        if self._dyn_info is None:
            init = self._init_addrs
            counts = [sum(1 for _ in grp) for _m, grp in groupby(self.mods.names)]
            pages, groups = record_pages([a not in init for a in self._boot_core], counts)
            self._dyn_info = (len(self.names), pages, groups)
        return self._dyn_info

    def boot_count(self) -> int:
        """The core records ``ftrace_update_code()`` converted at boot."""
        return self._ncore + len(self._init_addrs)

    @property
    def _boot_core(self) -> array:
        """The addresses of those records, in order: the core records' (in
        address order) and the init text's (none of them a record's)."""
        return array("Q", merge(islice(self.addrs, self._ncore), sorted(self._init_addrs)))

    def rec_of_ip(self, ip: int):
        """The record of the function holding ``ip`` (None if untraceable)."""
        c = self._ip_cache
        r = c.get(ip, -1)
        if r == -1:
            hit = self._ks.lookup(ip)
            r = self.by_addr.get(ip - hit[1]) if hit is not None else None
            if len(c) > 1 << 16:
                c.clear()
            c[ip] = r
        return r

    def avail_text(self) -> str:
        if self._avail is None:
            self._avail = "".join(self.display(i) + "\n" for i in range(len(self.names)))
        return self._avail

    def avail_addrs_text(self) -> str:
        if self._avail_addrs is None:
            self._avail_addrs = "".join("%x %s\n" % (self.ip(i), self.display(i))
                                        for i in range(len(self.names)))
        return self._avail_addrs

    def match(self, func: str | None, mod: str | None):
        """``match_records()`` without the hash: (matching record indices,
        clear) — ``clear`` when ``func`` starts with ``!``."""
        clear = False
        t, search = MATCH_FULL, ""
        if func is not None:
            t, search, clear = filter_parse_regex(func)
        if t == MATCH_INDEX:
            try:
                idx = kstrtoul(search, 0) - 1
            except ValueError:
                return [], clear
            return ([idx] if 0 <= idx < len(self.names) else []), clear
        if t == MATCH_FULL:
            funcs = self.named(search) if search or mod is None else range(len(self.names))
        else:
            funcs = self.index.match(t, search)
        if mod is None:
            return funcs, clear
        mt, ms, exclude = filter_parse_regex(mod)
        mg = Glob(mt if mt != MATCH_INDEX else MATCH_FULL, ms)
        out = []
        mods = self.mods
        for i in funcs:
            modname = mods[i]
            if not len(mg):
                # blank module: any module's functions (or, with '!', the core's)
                if (not exclude) == (modname is None):
                    continue
            else:
                mod_matches = modname is not None and mg.match(modname)
                if (not mod_matches) == (not exclude):
                    continue
            out.append(i)
        return out, clear


def record_pages(boot_kept: list, module_counts: list) -> tuple[int, int]:
    """(pages, groups) of the record pages: the core records placed at boot
    (``boot_kept[i]``: the i-th, in address order, is still there), with the
    groups the freed records left empty freed; a module's records in
    groups of their own."""
    pages = groups = 0
    i = 0
    for order, cnt in allocate_pages(len(boot_kept)):
        if any(boot_kept[i:i + cnt]):
            pages += 1 << order
            groups += 1
        i += cnt
    for n in module_counts:
        for order, _cnt in allocate_pages(n):
            pages += 1 << order
            groups += 1
    return pages, groups


def allocate_pages(count: int) -> list[tuple[int, int]]:
    """``ftrace_allocate_pages()``: (order, records placed) of each group
    for ``count`` records."""
    out = []
    per_page = PAGE_SIZE // ENTRY_SIZE
    while count > 0:
        pages = -(-count * ENTRY_SIZE // PAGE_SIZE)
        order = pages.bit_length() - 1                 # fls(pages) - 1
        cnt = min(count, per_page << order)
        out.append((order, cnt))
        count -= cnt
    return out


def dyn_ftrace_total_info(kernel) -> str:
    """``tracing_read_dyn_info()``: ``"%ld pages:%ld groups: %ld\n"``; from
    6.13 also how long the boot's nop patching took (``ftrace_update_time``,
    a draw of 230-330 ns a record, what x86-64 machines report) and the
    modules' (``ftrace_total_mod_time``: no module was loaded)."""
    recs = ftrace_records(kernel)
    text = "%d pages:%d groups: %d\n" % recs.dyn_info()
    if kernel.config.version_at_least(6, 13):
        ns = int(recs.boot_count() * kernel.subsystem_rng("ftrace-update").uniform(230, 330))
        text += ("ftrace boot update time = %d (ns)\n"
                 "ftrace module total update time = %d (ns)\n" % (ns, 0))
    return text


def ftrace_records(kernel) -> FtraceRecords:
    tracing = kernel.tracing
    r = tracing.ftrace_records
    if r is None:
        r = tracing.ftrace_records = FtraceRecords(kernel)
    return r
