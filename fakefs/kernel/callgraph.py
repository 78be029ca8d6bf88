"""The call-graph description the simulated CPUs walk: ``data/callgraph.txt``.

``CallGraph.parse()`` reads the description (the syntax is at the top of
the file): call edges with weights, the functions' roles (``%loop``,
``%halt``, ``%switch`` ...), interrupt entries, helpers, tracepoint sites
and per-profile call lines and roots.  Names are not resolved here: that is
against a symbol table, in ``walkgraph``.
"""

from __future__ import annotations

import os

DATA_DIR = os.path.join(os.path.dirname(__file__), "data")
CALLGRAPH_PATH = os.path.join(DATA_DIR, "callgraph.txt")

RET = "_"          # callee token: return without calling anything


class CallGraph:
    """The parsed call-graph description (names not yet resolved)."""

    def __init__(self):
        self.params: dict[str, float] = {}
        self.calls: dict[str, list[tuple[str, float]]] = {}
        self.notrace: set[str] = set()
        self.loop: set[str] = set()
        self.halt: set[str] = set()
        self.switch: set[str] = set()
        self.entry: set[str] = set()
        self.usermode: set[str] = set()
        self.kernelmode: set[str] = set()
        self.notidle: set[str] = set()
        self.dispatch: set[str] = set()
        self.again: dict[str, float] = {}
        self.irq: list[tuple[str, float]] = []
        self.helpers: list[tuple[str, float]] = []
        self.helpers_task: list[tuple[str, float]] = []
        self.events: dict[str, list[str]] = {}
        self.profiles: dict[str, dict] = {}
        self._callers: dict[str, list[str]] | None = None   # callers_of(), built once parsed

    @classmethod
    def parse(cls, text: str) -> "CallGraph":
        g = cls()
        prof = None
        for lineno, raw in enumerate(text.splitlines(), 1):
            line = raw.split("#", 1)[0].strip()
            if not line:
                continue
            if line.startswith("%"):
                word, _, rest = line.partition(" ")
                args = rest.split()
                if word == "%param":
                    g.params[args[0]] = float(args[1])
                elif word == "%notrace":
                    g.notrace.update(args)
                elif word == "%loop":
                    g.loop.update(args)
                elif word == "%halt":
                    g.halt.update(args)
                elif word == "%switch":
                    g.switch.update(args)
                elif word == "%entry":
                    g.entry.update(args)
                elif word == "%usermode":
                    g.usermode.update(args)
                elif word == "%kernelmode":
                    g.kernelmode.update(args)
                elif word == "%notidle":
                    g.notidle.update(args)
                elif word == "%dispatch":
                    g.dispatch.update(args)
                elif word == "%again":
                    for name in args[1:]:
                        g.again[name] = float(args[0])
                elif word == "%irq":
                    g.irq.extend(_weighted(args, lineno))
                elif word == "%helpers":
                    g.helpers.extend(_weighted(args, lineno))
                elif word == "%helpers_task":
                    g.helpers_task.extend(_weighted(args, lineno))
                elif word == "%event":
                    g.events[args[0]] = args[1:]
                elif word == "%profile":
                    prof = g.profiles.setdefault(args[0], {"roots": [], "calls": {}})
                elif word == "%root":
                    if prof is None:
                        raise ValueError("callgraph:%d: %%root outside a profile" % lineno)
                    prof["roots"].extend(_weighted(args, lineno))
                elif word == "%end":
                    prof = None
                else:
                    raise ValueError("callgraph:%d: unknown directive %s" % (lineno, word))
                continue
            caller, sep, rest = line.partition(":")
            if not sep:
                raise ValueError("callgraph:%d: expected 'caller: callees'" % lineno)
            caller = caller.strip()
            edges = _weighted(rest.split(), lineno)
            if prof is None:
                g.calls.setdefault(caller, []).extend(edges)
            else:
                prof["calls"].setdefault(caller, []).extend(edges)
        # calls weighing less than 1 in all: the rest is calling nothing
        for calls in [g.calls] + [p["calls"] for p in g.profiles.values()]:
            for edges in calls.values():
                total = sum(w for _, w in edges)
                if 0 < total < 1 and all(t != RET for t, _ in edges):
                    edges.append((RET, 1.0 - total))
        return g

    def callers_of(self, name: str) -> list[str]:
        """The callers the common graph gives ``name`` (in file order)."""
        rev = self._callers
        if rev is None:
            rev = self._callers = {}
            for caller, es in self.calls.items():
                for t, _w in es:
                    for n in t.split("|"):
                        got = rev.setdefault(n, [])
                        if caller not in got:
                            got.append(caller)
        return rev.get(name, [])

    def tokens(self):
        """Every name token the description mentions."""
        seen = set(self.notrace | self.loop | self.halt | self.switch | set(self.again)
                   | self.entry | self.usermode | self.kernelmode | self.notidle
                   | self.dispatch)
        for c, es in self.calls.items():
            seen.add(c)
            seen.update(t for t, _ in es)
        for p in self.profiles.values():
            seen.update(t for t, _ in p["roots"])
            for c, es in p["calls"].items():
                seen.add(c)
                seen.update(t for t, _ in es)
        seen.update(t for t, _ in self.irq)
        seen.update(t for t, _ in self.helpers)
        seen.update(t for t, _ in self.helpers_task)
        for ts in self.events.values():
            seen.update(ts)
        return seen


def _weighted(args, lineno):
    out = []
    for a in args:
        name, star, w = a.partition("*")
        try:
            weight = float(w) if star else 1.0
        except ValueError:
            raise ValueError("callgraph:%d: bad weight in %r" % (lineno, a)) from None
        if not name:
            raise ValueError("callgraph:%d: empty name in %r" % (lineno, a))
        out.append((name, weight))
    return out


def load_callgraph(path: str = CALLGRAPH_PATH) -> CallGraph:
    with open(path, encoding="ascii") as f:
        return CallGraph.parse(f.read())

