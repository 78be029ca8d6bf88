"""The dyn_ftrace records of kernel/trace/ftrace.c and how a glob picks them.

* The records (``struct dyn_ftrace``): every traceable function of the
  symbol table, in address order, module functions after the core ones —
  what ``available_filter_functions`` lists.  Not traceable: padding
  symbols, init text (freed after boot), the entry, noinstr and cpuidle
  text, static-call trampolines and thunks, and whatever the workload's
  call graph marks ``%notrace``.
* The globs of the filter files (``filter_parse_regex()``, ``struct
  ftrace_glob``, ``ftrace_match()``) and ``match_records()``: a function
  name, a ``*`` glob, a record index or a ``:mod:`` module pattern.
"""

from __future__ import annotations

from bisect import bisect_right

from ..lib.glob import glob_regex
from ..lib.kstrtox import kstrtoul
from ..workload import FENTRY_IP

# filter_parse_regex() types
MATCH_FULL, MATCH_FRONT_ONLY, MATCH_MIDDLE_ONLY, MATCH_END_ONLY, MATCH_GLOB, MATCH_INDEX = range(6)

# symbols that are text but never ftrace records
_SKIP_PREFIXES = ("__pfx_", "__cfi_", "__pi_", "__SCT__", "__x86_indirect_", "__x86_return_thunk",
                  "srso_", "retbleed_")
_SKIP_RANGES = (("__entry_text_start", "__entry_text_end"),
                ("__noinstr_text_start", "__noinstr_text_end"),
                ("__cpuidle_text_start", "__cpuidle_text_end"),
                ("__static_call_text_start", "_etext"),
                ("_sinittext", "_einittext"))


# --------------------------------------------------------------- matching
def filter_parse_regex(buff: str):
    """(type, search, not) the way ``filter_parse_regex()`` reads a glob."""
    neg = buff.startswith("!")
    if neg:
        buff = buff[1:]
    if buff[:1].isdigit():
        return MATCH_INDEX, buff, neg
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


class Glob:
    """``struct ftrace_glob``: a parsed pattern and ``ftrace_match()``."""

    __slots__ = ("type", "search", "_re")

    def __init__(self, typ, search):
        self.type = typ
        self.search = search
        self._re = glob_regex(search) if typ == MATCH_GLOB else None

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
            return self._re.fullmatch(s) is not None
        return False


# --------------------------------------------------------------- records
class FtraceRecords:
    """The dyn_ftrace records of the running kernel (one per kernel)."""

    def __init__(self, kernel):
        ks = kernel.kallsyms
        notrace = set()
        wl = kernel.workload
        if wl is not None:
            for tok in wl.graph.notrace:
                for alt in tok.split("|"):
                    name = ks.resolve(alt)
                    if name is not None:
                        notrace.add(name)
        spans = []
        for lo, hi in _SKIP_RANGES:
            a, b = ks.addr_of(lo), ks.addr_of(hi)
            if a is not None and b is not None and a < b:
                spans.append([a, b])
        spans.sort()
        merged = []
        for a, b in spans:
            if merged and a <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], b)
            else:
                merged.append([a, b])
        bounds = [x for span in merged for x in span]     # inside: odd bisect
        markers = {"_stext", "_text", "_etext", "_sinittext", "_einittext"}
        self.names: list[str] = []
        self.mods: list[str | None] = []
        self.addrs: list[int] = []
        core = []
        modrecs = []
        for addr, typ, name, mod in ks.symbols():
            if (name.startswith(_SKIP_PREFIXES) or name in markers or name in notrace
                    or name.endswith(("_text_start", "_text_end")) or ".cold" in name):
                # (``foo.cold``: the unlikely part gcc splits off a function,
                # entered by a jump, with no __fentry__ call of its own)
                continue
            if mod is None:
                if bisect_right(bounds, addr) & 1:
                    continue
                core.append((addr, name))
            else:
                modrecs.append((addr, name, mod))
        core.sort(key=lambda r: r[0])           # ftrace_process_locs() sorts
        seen = set()
        for addr, name in core:
            if addr in seen:                    # aliases share one record
                continue
            seen.add(addr)
            self.names.append(name)
            self.mods.append(None)
            self.addrs.append(addr)
        for addr, name, mod in modrecs:
            if addr in seen:
                continue
            seen.add(addr)
            self.names.append(name)
            self.mods.append(mod)
            self.addrs.append(addr)
        self.modules = frozenset(m for m in self.mods if m)
        self.by_addr = {a: i for i, a in enumerate(self.addrs)}
        self.by_name: dict[str, list[int]] = {}
        for i, n in enumerate(self.names):
            self.by_name.setdefault(n, []).append(i)
        self._ks = ks
        self._ip_cache: dict[int, int | None] = {}
        self._avail = None
        self._avail_addrs = None

    def __len__(self):
        return len(self.names)

    def display(self, i: int) -> str:
        """``%ps`` of a record: ``name`` or ``name [module]``."""
        m = self.mods[i]
        return self.names[i] if m is None else "%s [%s]" % (self.names[i], m)

    def ip(self, i: int) -> int:
        """The record's ip: the ``__fentry__`` call after ``endbr64``."""
        return self.addrs[i] + FENTRY_IP

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
        fg = Glob(MATCH_FULL, "")
        if func is not None:
            t, s, clear = filter_parse_regex(func)
            fg = Glob(t, s)
        if fg.type == MATCH_INDEX:
            try:
                idx = kstrtoul(fg.search, 0) - 1
            except ValueError:
                return [], clear
            return ([idx] if 0 <= idx < len(self.names) else []), clear
        if mod is None:
            if fg.type == MATCH_FULL:
                return list(self.by_name.get(fg.search, ())), clear
            m = fg.match
            return [i for i, n in enumerate(self.names) if m(n)], clear
        mt, ms, exclude = filter_parse_regex(mod)
        mg = Glob(mt if mt != MATCH_INDEX else MATCH_FULL, ms)
        out = []
        for i, n in enumerate(self.names):
            modname = self.mods[i]
            if not len(mg):
                # blank module: any module's functions (or, with '!', the core's)
                if (not exclude) == (modname is None):
                    continue
            else:
                mod_matches = modname is not None and mg.match(modname)
                if (not mod_matches) == (not exclude):
                    continue
            if not len(fg) or fg.match(n):
                out.append(i)
        return out, clear


def ftrace_records(kernel) -> FtraceRecords:
    tracing = kernel.tracing
    r = tracing.ftrace_records
    if r is None:
        r = tracing.ftrace_records = FtraceRecords(kernel)
    return r
