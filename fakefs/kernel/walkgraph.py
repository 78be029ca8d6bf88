"""The call graph as the walk runs it: resolved against the symbol table.

``WalkGraph(ks, graph)`` numbers the functions reachable from the
profiles' roots and the interrupt entries (``names``/``ids``), gives each
its address, size, entry return address and flags (``F_*``: traced, a
loop, a halt, a context switch ...), the return address of every call
site, the chance it calls again (``again``), and per profile a pick table
of callees for every function (``tables``; ``"profile:threadfn"``
variants on demand, ``variant()``).  Names the symbol table lacks (inlined
in that build) are spliced out: their callees become their callers'
(``missing`` lists them).  ``events`` maps a tracepoint kind to the ids of
the functions where it fires.

Pick tables are ``(callees, cumulative weights, total)`` (callee -1 is
"return"), drawn from with ``pick()``.  Addresses of frames are derived
from names by hashing (``call_off``, ``irq_off``, ``tp_off``), so a given
path always has the same stack.

A frame repeats what it did: a function called along the same path finds
its data in much the same state and takes the same branches, so it calls
what it called before.  The walk draws every call from the table, but a
callee the frame has not called yet only with chance novelty / (n +
novelty) after n calls from it; otherwise it draws again (up to
``REDRAWS`` times) until it finds one it has called.  Among the calls a
frame makes, those it made before keep the table's proportions; what it
loses is the callees it has not met, so the distinct stacks grow with the
logarithm of the calls made along a path, not with the calls, as a real
kernel's do (the stackmap series' selftest finds no drops from its 16,384
stacks after a second of the function tracer with stacks).  Functions
whose callee depends on data from outside (``%dispatch``: the system call
table, a work item's function, an interrupt's handler, a timer's
callback, the idle loop's need_resched) draw afresh every time.  Only the
walk's own runs teach a frame (not a run on the side, ``Walk.aside``), and
a frame forgets with a restart of the frames.  ``novelty`` is ``%param
novelty`` (default ``NOVELTY``).
"""

from __future__ import annotations

import zlib
from bisect import bisect_right

from .callgraph import RET, CallGraph
from .irq import HARDIRQ_FUNCS, SOFTIRQ_FUNCS

# A traced function's address in a stack: after "endbr64; call __fentry__".
FENTRY_RET = 9
# ftrace's ip for a traced function (the __fentry__ call site).
FENTRY_IP = 4
# ftrace's ip of a call is its frame's entry (FENTRY_RET in) plus this
CALL_IP_OFF = FENTRY_IP - FENTRY_RET

# a frame repeats what it did (above): the weight of a call not made before,
# and how many draws look for one made before
NOVELTY = 0.2
REDRAWS = 8

# function flags
F_TRACE, F_LOOP, F_HALT, F_SWITCH, F_ENTRY, F_UMODE, F_KMODE, F_NOIDLE = 1, 2, 4, 8, 16, 32, 64, 128
F_DISPATCH = 256       # its callee depends on outside data: drawn afresh every time
# what a chain of frames runs for: a kernel thread, a user task, the idle task
KMODE, UMODE, IDLE = 0, 1, 2

# the context a frame's function gives (a frame's ``ctx``): the innermost
# interrupt entry's (hardirq or softirq), and whether the idle loop is below
CTX_SOFTIRQ, CTX_HARDIRQ, CTX_IDLE = 1, 2, 4
IDLE_FUNCS = frozenset({"do_idle"})    # a stack through it is the idle task's


def function_context(name: str) -> int:
    """The context bits a function named ``name`` gives its frame."""
    return (CTX_HARDIRQ if name in HARDIRQ_FUNCS else CTX_SOFTIRQ if name in SOFTIRQ_FUNCS
            else CTX_IDLE if name in IDLE_FUNCS else 0)


def callee_mode(fl: int, mode: int) -> int:
    """The mode a function of flags ``fl`` runs in when called from a
    frame of ``mode`` (an entry from user mode is an exception taken in
    kernel code), or -1 where it cannot be called from there."""
    if fl & F_ENTRY and mode == UMODE:
        mode = KMODE
    if ((fl & F_UMODE and mode != UMODE) or (fl & F_KMODE and mode == UMODE)
            or (fl & F_NOIDLE and mode == IDLE)):
        return -1
    return mode


def inner_context(own: int, below: int) -> int:
    """A frame's context from its function's (``own``) and its caller's
    frame's (``below``): the innermost interrupt entry wins, the idle
    loop anywhere below counts."""
    return (own & 3 or below & 3) | ((own | below) & CTX_IDLE)


class WalkGraph:
    """``graph`` resolved against the symbol table ``ks``."""

    def __init__(self, ks, graph: CallGraph):
        self.ks = ks
        self.graph = graph
        p = graph.params
        self.max_depth = int(p.get("max_depth", 30))
        self.default_again = p.get("again", 0.3)
        self.missing: list[str] = []           # tokens the symbol table lacks
        self._res_cache: dict = {}
        self._missing_set: set = set()
        self.ids: dict[str, int] = {}
        self.names: list[str] = []
        self.profiles: dict[str, dict] = {}
        self.addr: list[int] = []
        self.size: list[int] = []
        self.flags: list[int] = []
        self.again: list[float] = []
        self.entry: list[int] = []
        self.fctx: list[int] = []       # the context each function gives its frame
        self.site: dict[tuple[int, int], int] = {}
        self.tables: dict[str, list] = {}
        self.base_table: list = []
        self.irq_table = None
        self.events: dict[str, frozenset] = {}
        self._resolve_all()

    def _resolve(self, token: str) -> str | None:
        r = self._res_cache.get(token, 0)
        if r == 0:
            r = None
            for alt in token.split("|"):
                r = self.ks.resolve(alt)
                if r is not None:
                    break
            self._res_cache[token] = r
        return r

    def _fid(self, name: str) -> int:
        i = self.ids.get(name)
        if i is None:
            i = self.ids[name] = len(self.names)
            self.names.append(name)
        return i

    def _expand(self, token, weight, raw, depth=0):
        """Resolved (name, weight) for an edge to ``token``, splicing out
        functions the symbol table lacks."""
        if weight <= 0:
            return []
        if token == RET:
            return [(RET, weight)]
        name = self._resolve(token)
        if name is not None:
            return [(name, weight)]
        if token not in self._missing_set:
            self._missing_set.add(token)
            self.missing.append(token)
        edges = raw.get(token)
        if edges is None:
            for alt in token.split("|"):
                edges = raw.get(alt)
                if edges is not None:
                    break
        if not edges or depth > 8:
            return []
        total = sum(w for _, w in edges)
        out = []
        for t, w in edges:
            out.extend(self._expand(t, weight * w / total, raw, depth + 1))
        return out

    def _edges_of(self, calls: dict, raw: dict) -> dict:
        """{caller name: [(callee name, weight)]}, merged by resolved name."""
        out: dict[str, dict[str, float]] = {}
        for caller, edges in calls.items():
            cname = self._resolve(caller)
            if cname is None:
                continue
            d = out.setdefault(cname, {})
            for t, w in edges:
                for name, ww in self._expand(t, w, raw):
                    if name != cname:
                        d[name] = d.get(name, 0.0) + ww
        return {c: list(d.items()) for c, d in out.items() if d}

    def _resolve_all(self):
        g = self.graph
        ks = self.ks
        common = self._edges_of(g.calls, g.calls)
        helpers = [(n, w) for n, w in ((self._resolve(t), w) for t, w in g.helpers) if n]
        helpers_task = [(n, w) for n, w in ((self._resolve(t), w) for t, w in g.helpers_task) if n]
        notrace = {self._resolve(t) for t in g.notrace} - {None}
        loops = {self._resolve(t) for t in g.loop} - {None}
        halts = {self._resolve(t) for t in g.halt} - {None}
        switches = {self._resolve(t) for t in g.switch} - {None}
        entries = {self._resolve(t) for t in g.entry} - {None}
        umodes = {self._resolve(t) for t in g.usermode} - {None}
        kmodes = {self._resolve(t) for t in g.kernelmode} - {None}
        notidle = {self._resolve(t) for t in g.notidle} - {None}
        dispatch = {self._resolve(t) for t in g.dispatch} - {None}
        again = {}
        for t, v in g.again.items():
            n = self._resolve(t)
            if n is not None:
                again[n] = v
        # functions interrupts can run: they get no sleeping helpers
        irq_roots = []
        for t, w in g.irq:
            irq_roots.extend(self._expand(t, w, g.calls))
        in_irq = set()
        todo = [n for n, _ in irq_roots]
        while todo:
            n = todo.pop()
            if n in in_irq:
                continue
            in_irq.add(n)
            todo.extend(c for c, _ in common.get(n, ()))
        # helpers: every traceable caller of two or more functions calls a
        # few, chosen per caller
        hfrac = g.params.get("helpers", 0.2)

        def add_helpers(calls):
            if not helpers or hfrac <= 0:
                return
            for caller, edges in calls.items():
                if (len(edges) < 2 or caller in notrace or caller in halts
                        or caller in switches):
                    continue
                pool = helpers if caller in in_irq else helpers + helpers_task
                hs = _pick_helpers(caller, pool)
                total = sum(w for _, w in edges)
                have = {n for n, _ in edges}
                for hname in hs:
                    if hname != caller and hname not in have:
                        edges.append((hname, total * hfrac / len(hs)))

        add_helpers(common)
        # profiles: their call lines replace the common ones for their tasks
        for pname, prof in g.profiles.items():
            raw = dict(g.calls)
            raw.update(prof["calls"])
            over = self._edges_of(prof["calls"], raw)
            add_helpers(over)
            roots = []
            for t, w in prof["roots"]:
                roots.extend(self._expand(t, w, raw))
            self.profiles[pname] = {"calls": over, "roots": roots}
        # number the functions reachable from roots and interrupts
        order = []
        for prof in self.profiles.values():
            order.extend(n for n, _ in prof["roots"])
        order.extend(n for n, _ in irq_roots)
        seen = set()
        stack = list(reversed(order))
        allcalls = [common] + [p["calls"] for p in self.profiles.values()]
        while stack:
            n = stack.pop()
            if n in seen or n == RET:
                continue
            seen.add(n)
            self._fid(n)
            for calls in allcalls:
                for c, _ in reversed(calls.get(n, ())):
                    if c not in seen:
                        stack.append(c)
        irq_names = {n for n, _ in irq_roots}
        nf = len(self.names)
        self.addr = [0] * nf
        self.size = [0] * nf
        self.flags = [0] * nf
        self.again = [self.default_again] * nf
        for i, n in enumerate(self.names):
            a = ks.addr_of(n)
            hit = ks.lookup(a)
            self.addr[i] = a
            self.size[i] = hit[2] if hit and hit[1] == 0 else 16
            f = 0 if n in notrace else F_TRACE
            if n in loops:
                f |= F_LOOP
            if n in halts:
                f |= F_HALT
            if n in switches:
                f |= F_SWITCH
            if n in entries or n in irq_names:
                f |= F_ENTRY
            if n in umodes:
                f |= F_UMODE
            if n in kmodes:
                f |= F_KMODE
            if n in notidle:
                f |= F_NOIDLE
            if n in dispatch:
                f |= F_DISPATCH
            self.flags[i] = f
            if n in loops:
                self.again[i] = 1.0
            elif n in halts:
                self.again[i] = 0.0
            elif n in again:
                self.again[i] = again[n]
        self.entry = [a + _entry_off(s) for a, s in zip(self.addr, self.size)]
        self.fctx = [function_context(n) for n in self.names]
        # call sites: fixed per (caller, callee), in the order listed
        for calls in allcalls:
            for caller, edges in calls.items():
                ci = self.ids.get(caller)
                if ci is None:
                    continue
                for k, (callee, _) in enumerate(edges):
                    gi = self.ids.get(callee)
                    if gi is None or (ci, gi) in self.site:
                        continue
                    self.site[(ci, gi)] = self.addr[ci] + call_off(
                        self.names[ci], callee, k, len(edges), self.size[ci])
        # pick tables
        sharpen = g.params.get("sharpen", 1.0)
        base_table = [None] * nf
        for caller, edges in common.items():
            ci = self.ids.get(caller)
            if ci is not None:
                base_table[ci] = _pick_table(edges, self.ids, sharpen)
        self.base_table = base_table
        for pname, prof in self.profiles.items():
            t = list(base_table)
            for caller, edges in prof["calls"].items():
                ci = self.ids.get(caller)
                if ci is not None:
                    t[ci] = _pick_table(edges, self.ids, sharpen)
            self.tables[pname] = t
            prof["root_table"] = _pick_table(prof["roots"], self.ids)
        self.irq_table = _pick_table(irq_roots, self.ids)
        # a function that calls just one other calls it once
        for f, e in enumerate(base_table):
            if (e is not None and not self.flags[f] & (F_LOOP | F_HALT)
                    and self.names[f] not in again and len(set(e[0]) - {-1}) == 1):
                self.again[f] = 0.0
        # tracepoint sites
        for kind, toks in g.events.items():
            ids = set()
            for t in toks:
                n = self._resolve(t)
                if n is not None and n in self.ids:
                    ids.add(self.ids[n])
            self.events[kind] = frozenset(ids)
        if not self.events.get("sched_switch"):
            # switches happen where the graph switches
            self.events["sched_switch"] = frozenset(
                i for i, fl in enumerate(self.flags) if fl & F_SWITCH)

    def variant(self, profile, threadfn):
        """``profile`` whose kthread() runs ``threadfn``."""
        name = "%s:%s" % (profile, threadfn)
        if name not in self.tables:
            t = list(self.tables[profile])
            kthread = self.ids.get(self._resolve("kthread") or "")
            fn = self.ids.get(self._resolve(threadfn) or "")
            if kthread is not None and fn is not None:
                t[kthread] = ([fn], [1.0], 1.0)
            self.tables[name] = t
            self.profiles[name] = dict(self.profiles[profile])
        return name

    def distinct_paths(self) -> int:
        """How many distinct stacks the function tracer can see (an upper
        estimate: every path of the graph within the depth limit, with
        interrupts nested at every point they can arrive)."""
        maxd = self.max_depth
        irqd = maxd - 8
        memo: dict = {}

        def count(table, f, room):
            key = (id(table), f, room)
            r = memo.get(key)
            if r is None:
                r = 1
                e = table[f]
                if e is not None and room > 1 and not self.flags[f] & F_SWITCH:
                    for g in set(e[0]) - {-1}:
                        r += count(table, g, room - 1)
                memo[key] = r
            return r

        irq_roots = sorted(set(self.irq_table[0]))
        irq_by_room = {}

        def irq_count(room):
            r = irq_by_room.get(room)
            if r is None:
                r = irq_by_room[room] = sum(count(self.base_table, g, room) for g in irq_roots)
            return r

        total = irq_count(maxd)
        for pname, prof in self.profiles.items():
            table = self.tables[pname]
            roots = sorted(set(prof["root_table"][0]))
            # frames by depth, to nest interrupts on them
            level = {g: 1 for g in roots}
            for d in range(1, maxd + 1):
                nxt: dict[int, int] = {}
                for f, n in level.items():
                    total += n
                    if d <= irqd:
                        total += n * irq_count(maxd - d)
                    e = table[f]
                    if e is None or d >= maxd or self.flags[f] & F_SWITCH:
                        continue
                    for g in set(e[0]) - {-1}:
                        nxt[g] = nxt.get(g, 0) + n
                level = nxt
                if not level:
                    break
        return total


# ---------------------------------------------------------------- helpers
def _h(*parts) -> int:
    return zlib.crc32("\0".join(parts).encode())


def pick(table, rnd):
    callees, cum, total = table
    return callees[bisect_right(cum, rnd() * total)]


def _pick_table(edges, ids, sharpen=1.0):
    callees, cum = [], []
    acc = 0.0
    for name, w in edges:
        i = -1 if name == RET else ids.get(name)
        if i is None or w <= 0:
            continue
        acc += w ** sharpen
        callees.append(i)
        cum.append(acc)
    if not callees:
        return None
    # bisect_right(cum, x) for x in [0, total) lands on a valid index
    return (callees, cum, acc)


def table_items(table):
    if table is None:
        return [], []
    callees, cum, _ = table
    ws = []
    prev = 0.0
    for c in cum:
        ws.append(c - prev)
        prev = c
    return callees, ws


def _pick_helpers(caller, helpers):
    h = _h("helpers", caller)
    k = 2 + h % 3
    total = sum(w for _, w in helpers)
    out = []
    for j in range(k):
        x = (_h("helper", caller, str(j)) / 2**32) * total
        for name, w in helpers:
            x -= w
            if x < 0:
                break
        if name not in out:
            out.append(name)
    return out


def _entry_off(size):
    return FENTRY_RET if size > FENTRY_RET + 2 else max(1, size // 2)


def call_off(caller, callee, k, n, size):
    """Return address of the k-th of n call sites in a function of ``size``
    bytes: spread over the body in listed order, jittered per edge."""
    lo = FENTRY_RET + 5
    hi = size - 2
    if hi <= lo:
        return max(1, size // 2)
    span = (hi - lo) / n
    j = _h(caller, callee) / 2**32
    return int(lo + span * (k + 0.15 + 0.7 * j))


def irq_off(name, size):
    lo = FENTRY_RET + 1
    hi = size - 1
    if hi <= lo:
        return max(1, size // 2)
    return lo + _h("irq", name) % (hi - lo)


def tp_off(name, size):
    lo = FENTRY_RET + 5
    hi = size - 2
    if hi <= lo:
        return max(1, size // 2)
    return lo + int((hi - lo) * (0.3 + 0.4 * (_h("tp", name) / 2**32)))
