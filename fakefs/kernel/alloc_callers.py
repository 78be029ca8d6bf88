"""Who calls the allocation call sites the walk graph lacks: ``data/alloc_callers.txt``.

The walk graph (``callgraph.txt``) is hand-written and has a few hundred
of the kernel's hot paths; most functions holding an allocation tag (the
call sites /proc/allocinfo lists) are not in it.  ``tools/mkallocpaths.py``
read the 6.12 source for them and wrote, for each, its callers up to
functions the graph has: direct calls, calls through a struct member the
source put the function in (an ops table, a callback), system call stubs.
Lines are ``callee: caller caller ...``, source names, nearest first.

``AllocCallers(ks)`` serves them against the symbol table ``ks``: a name
that is a compiler clone in the table (``name.isra.0``) is the clone, and
a name the table lacks (inlined in that build), or has at the callee's
own address (an alias), is spliced out, its callers calling on, as
``walkgraph`` does with the graph.  So every frame
of a way up resolves with kallsyms.  Only the way *up* from a call site
uses this; the function tracer's walk stays on the graph.
"""

from __future__ import annotations

import os

from .kallsyms import source_name
from .walkgraph import call_off

DATA_DIR = os.path.join(os.path.dirname(__file__), "data")
ALLOC_CALLERS_PATH = os.path.join(DATA_DIR, "alloc_callers.txt")

SPLICE_DEPTH = 8           # names the table lacks, spliced in a row at most


def load_alloc_callers(path: str = ALLOC_CALLERS_PATH) -> dict[str, tuple[str, ...]]:
    """{callee: callers} of the data file (source names)."""
    out: dict[str, tuple[str, ...]] = {}
    with open(path, encoding="ascii") as f:
        for lineno, line in enumerate(f, 1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            callee, sep, rest = line.partition(":")
            if not sep:
                raise ValueError("alloc_callers:%d: expected 'callee: callers'" % lineno)
            out[callee.strip()] = tuple(rest.split())
    return out


class AllocCallers:
    """The source callers of ``data`` ({callee: callers}, the bundled file's
    by default) resolved against the symbol table ``ks``."""

    def __init__(self, ks, data: dict[str, tuple[str, ...]] | None = None):
        self.ks = ks
        self.data = load_alloc_callers() if data is None else data
        self._callers: dict[str, tuple[str, ...]] = {}
        self._rets: dict[tuple[str, str], int] = {}

    def callers(self, name: str) -> tuple[str, ...]:
        """Symbol names of the functions that call ``name`` (a symbol or
        source name) in the source, nearest first; a caller the table lacks
        gives its own callers in its place."""
        got = self._callers.get(name)
        if got is None:
            out: list[str] = []
            src = source_name(name)
            sym = self.ks.resolve(src) or name
            self._splice(src, self.ks.addr_of(sym), out, {src}, 0)
            got = self._callers[name] = tuple(out)
        return got

    def _splice(self, src: str, addr, out: list, seen: set, depth: int) -> None:
        for c in self.data.get(src, ()):
            if c in seen:
                continue
            seen.add(c)
            sym = self.ks.resolve(c)
            # (a caller at the callee's own address is an alias of it: a
            # system call's stub the compiler merged with its body)
            if sym is not None and (addr is None or self.ks.addr_of(sym) != addr):
                if sym not in out:
                    out.append(sym)
            elif depth < SPLICE_DEPTH:
                self._splice(c, addr, out, seen, depth + 1)

    def outer(self, name: str) -> str | None:
        """The function the symbol table has that ``name`` (a source name it
        lacks: inlined) is compiled into: its nearest caller there."""
        cs = self.callers(name)
        return cs[0] if cs else None

    def ret(self, caller: str, callee: str) -> int:
        """The return address in ``caller`` of its call of ``callee`` (symbol
        names): like the graph's call sites, fixed per pair."""
        key = (caller, callee)
        r = self._rets.get(key)
        if r is None:
            a = self.ks.addr_of(caller) or 0
            hit = self.ks.lookup(a) if a else None
            size = hit[2] if hit and hit[1] == 0 else 16
            r = self._rets[key] = a + call_off(caller, callee, 0, 1, size)
        return r
