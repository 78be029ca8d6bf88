"""What the simulated CPUs are doing: tasks, call paths, context switches.

The model is a random walk over a hand-written call graph of real kernel
paths (``data/callgraph.txt``).  Every task has its own position in the graph
(its kernel stack); the running task on a CPU advances by one *traced
function call* per ``sample()``: it calls into one of the current function's
callees, or returns and carries on in the caller.  Interrupts arrive on top of
whatever runs, idle CPUs wait in their halt instruction until one does, and
entering ``__schedule`` (to sleep, or preempted at the end of a time slice)
switches to another task of that CPU's runqueue, which resumes where it went
to sleep.  Popularity of stacks is therefore skewed the way it is on a real
machine: a few paths (idle, timer tick, the busy tasks' syscalls) take most
hits, over a long tail.

``stacks_for_event()`` gives the stack of the next tracepoint hit of a kind
(``EVENT_KINDS``: ``kmem_cache_alloc``, ``kmalloc``, ``kfree``,
``kmem_cache_free``, ``page_alloc``, ``sched_switch``, ``sched_waking``,
``sched_wakeup``, ``signal_generate``): the walk conditioned on getting to one of the functions
where it fires.  ``sched_switch`` switches tasks, the other kinds now and
then let the running task sleep first, but the wakeup kinds
(``NOSWITCH_KINDS``) never do: the waker goes on running.

Stacks are tuples of return addresses, innermost first, as
``stack_trace_save()`` stores them: ``stack[0]`` is inside the function being
entered (just after its ``__fentry__`` call; for events, at the tracepoint),
``stack[1]`` the call site in its caller, and so on to the entry point.  A
given path always gives the same tuple object.  Names the symbol table lacks
(inlined in that build) are spliced out of the graph, so every frame
resolves with the table in use.
"""

from __future__ import annotations

import os
import zlib
from bisect import bisect_right
from collections import deque

from .kallsyms import Kallsyms

DATA_DIR = os.path.join(os.path.dirname(__file__), "data")
CALLGRAPH_PATH = os.path.join(DATA_DIR, "callgraph.txt")

# A traced function's address in a stack: after "endbr64; call __fentry__".
FENTRY_RET = 9
# ftrace's ip for a traced function (the __fentry__ call site).
FENTRY_IP = 4

RET = "_"          # callee token: return without calling anything
ENTER = 0          # the frame's function was just called
RESUME = 1         # a callee (or interrupt) just returned into it

_TRACE, _LOOP, _HALT, _SWITCH, _ENTRY, _UMODE, _KMODE, _NOIDLE = 1, 2, 4, 8, 16, 32, 64, 128
# what a chain of frames runs for: a kernel thread, a user task, the idle task
KMODE, UMODE, IDLE = 0, 1, 2

EVENT_KINDS = ("kmem_cache_alloc", "kmalloc", "sched_switch", "page_alloc",
               "kfree", "kmem_cache_free", "sched_waking", "sched_wakeup", "signal_generate")
# kinds whose stacks never come with a context switch: the task that wakes
# another one goes on running (and the stacks must not move sched.curr)
NOSWITCH_KINDS = frozenset({"sched_waking", "sched_wakeup"})

FRAME_CAP = 400_000        # distinct stacks kept before the path cache restarts
EVENT_MEMO = 8             # event_stack(): paths sampled per (frame, kind) before reusing them
EVENT_MEMO_KEYS = 200_000
ADOPTED_KEPT = 1024        # walk states of tasks the graph's table does not have
CALL_TRIES = 4             # calls_to(): tasks tried before giving up
TARGET_SETS_KEPT = 20      # calls_to() target sets whose reach tables are cached


# ---------------------------------------------------------------- the graph
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
        self.again: dict[str, float] = {}
        self.irq: list[tuple[str, float]] = []
        self.helpers: list[tuple[str, float]] = []
        self.helpers_task: list[tuple[str, float]] = []
        self.events: dict[str, list[str]] = {}
        self.profiles: dict[str, dict] = {}

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

    def tokens(self):
        """Every name token the description mentions."""
        seen = set(self.notrace | self.loop | self.halt | self.switch | set(self.again)
                   | self.entry | self.usermode | self.kernelmode | self.notidle)
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


def _h(*parts) -> int:
    return zlib.crc32("\0".join(parts).encode())


# ------------------------------------------------------------------ frames
class _Frame:
    """One distinct kernel stack: a function and the frames below it."""

    __slots__ = ("fn", "parent", "base", "stack", "kids", "depth", "irq", "tp", "mode")

    def __init__(self, fn, parent, base, stack, irq, mode):
        self.fn = fn
        self.parent = parent
        self.base = base            # return addresses below this function
        self.stack = stack          # (entry ip,) + base
        self.kids = {}
        self.depth = len(stack)
        self.irq = irq              # inside an interrupt
        self.tp = None              # stack as seen by a tracepoint in fn
        self.mode = mode            # entered from user mode, in a kthread, idle


class _TaskState:
    __slots__ = ("task", "profile", "table", "roots", "frame", "phase", "weight", "user", "mode")

    def __init__(self, task, profile, table, roots, weight, user):
        self.task = task
        self.profile = profile
        self.table = table
        self.roots = roots
        self.frame = None
        self.phase = ENTER
        self.weight = weight
        self.user = user
        self.mode = UMODE if user else IDLE if task.pid == 0 else KMODE


class _Cpu:
    __slots__ = ("cpu", "ts", "idle", "rq", "idle_weight", "halt")

    def __init__(self, cpu, idle):
        self.cpu = cpu
        self.ts = idle
        self.idle = idle
        self.rq = []
        self.idle_weight = 1.0
        self.halt = None            # the idle task's frame waiting for irqs


# ---------------------------------------------------------------- workload
class Workload:
    """``kernel.workload``: the tasks and what every CPU runs.

    Public: ``sample(rng, cpu)``, ``stacks_for_event(rng, cpu, kind)``,
    ``calls_to(rng, cpu, ids)`` (with ``call_ids(addrs)`` and
    ``call_profile()``: calls of chosen functions, and how common they are),
    ``current(cpu)``, ``tasks()``, ``profile_of(pid)``, ``function_ip(stack)``,
    ``distinct_paths()``; ``switch_hooks`` (callables ``(cpu, prev, next,
    stack)`` run at every context switch, stack as seen by sched_switch);
    ``missing`` (graph names the symbol table lacks, spliced out).
    Everything is deterministic given the kernel seed and the rng passed in.
    """

    def __init__(self, kernel, graph: CallGraph | None = None):
        self.kernel = kernel
        self.ks = kernel.kallsyms
        if self.ks is None:               # booted without kallsyms_init: the table alone
            self.ks = kernel.kallsyms = Kallsyms.load(host=kernel.host_kallsyms)
        self.graph = graph or load_callgraph()
        p = self.graph.params
        self.max_depth = int(p.get("max_depth", 30))
        self.p_irq = p.get("irq", 0.0025)
        self.default_again = p.get("again", 0.3)
        self.p_event_irq = p.get("event_irq", 0.08)
        self.p_event_switch = p.get("event_switch", 0.05)
        self.p_preempt = p.get("preempt", 0.004)
        self.p_event_preempt = p.get("event_preempt", 0.25)
        self.switch_hooks: list = []
        # set when a machine decides who runs (``follow``): the walk then
        # never switches tasks by itself
        self.driven = False
        self.missing: list[str] = []           # tokens the symbol table lacks
        self._intern: dict[tuple, tuple] = {}
        self._event_memo: dict[tuple, list] = {}      # event_stack(): paths seen
        self._adopted: deque[int] = deque()           # pids follow() made a state for
        self._nframes = 0
        self._resolve_graph()
        self._reach_cache: dict = {}
        self._target_sets: list = []           # frozenset kinds in _reach_cache
        self._call_counts = None               # call_profile()
        self._fid_by_addr = None               # call_ids()
        self._roots: dict = {}
        self._user_irq: dict = {}
        self._cpus: list[_Cpu] = []
        self.states: dict[int, _TaskState] = {}
        self._spawn_tasks()
        self._warm_up()

    # ---------------------------------------------------------- resolution
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
        i = self._ids.get(name)
        if i is None:
            i = self._ids[name] = len(self.names)
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

    def _resolve_graph(self):
        g = self.graph
        ks = self.ks
        self._res_cache: dict = {}
        self._missing_set: set = set()
        self._ids: dict[str, int] = {}
        self.names: list[str] = []
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
        self.profiles: dict[str, dict] = {}
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
            f = 0 if n in notrace else _TRACE
            if n in loops:
                f |= _LOOP
            if n in halts:
                f |= _HALT
            if n in switches:
                f |= _SWITCH
            if n in entries or n in irq_names:
                f |= _ENTRY
            if n in umodes:
                f |= _UMODE
            if n in kmodes:
                f |= _KMODE
            if n in notidle:
                f |= _NOIDLE
            self.flags[i] = f
            if n in loops:
                self.again[i] = 1.0
            elif n in halts:
                self.again[i] = 0.0
            elif n in again:
                self.again[i] = again[n]
        self.entry = [a + _entry_off(s) for a, s in zip(self.addr, self.size)]
        # call sites: fixed per (caller, callee), in the order listed
        self._site: dict[tuple[int, int], int] = {}
        for calls in allcalls:
            for caller, edges in calls.items():
                ci = self._ids.get(caller)
                if ci is None:
                    continue
                for k, (callee, _) in enumerate(edges):
                    gi = self._ids.get(callee)
                    if gi is None or (ci, gi) in self._site:
                        continue
                    self._site[(ci, gi)] = self.addr[ci] + _call_off(
                        self.names[ci], callee, k, len(edges), self.size[ci])
        # pick tables
        self._tables: dict[str, list] = {}
        sharpen = g.params.get("sharpen", 1.0)
        base_table = [None] * nf
        for caller, edges in common.items():
            ci = self._ids.get(caller)
            if ci is not None:
                base_table[ci] = _pick_table(edges, self._ids, sharpen)
        self._base_table = base_table
        for pname, prof in self.profiles.items():
            t = list(base_table)
            for caller, edges in prof["calls"].items():
                ci = self._ids.get(caller)
                if ci is not None:
                    t[ci] = _pick_table(edges, self._ids, sharpen)
            self._tables[pname] = t
            prof["root_table"] = _pick_table(prof["roots"], self._ids)
        self._irq_table = _pick_table(irq_roots, self._ids)
        # a function that calls just one other calls it once
        for f, e in enumerate(base_table):
            if (e is not None and not self.flags[f] & (_LOOP | _HALT)
                    and self.names[f] not in again and len(set(e[0]) - {-1}) == 1):
                self.again[f] = 0.0
        # tracepoint sites
        self.events: dict[str, frozenset] = {}
        for kind, toks in g.events.items():
            ids = set()
            for t in toks:
                n = self._resolve(t)
                if n is not None and n in self._ids:
                    ids.add(self._ids[n])
            self.events[kind] = frozenset(ids)
        if not self.events.get("sched_switch"):
            # switches happen where the graph switches
            self.events["sched_switch"] = frozenset(
                i for i, fl in enumerate(self.flags) if fl & _SWITCH)

    # ---------------------------------------------------------- frames
    def _intern_t(self, t):
        r = self._intern.get(t)
        if r is None:
            self._intern[t] = r = t
        return r

    def _child(self, fr, g):
        """The frame for ``fr`` calling ``g`` (False if it cannot here)."""
        fl = self.flags[g]
        mode = fr.mode
        if fl & _ENTRY and mode == UMODE:
            mode = KMODE                # an exception taken in kernel code
        if ((fl & _UMODE and mode != UMODE) or (fl & _KMODE and mode == UMODE)
                or (fl & _NOIDLE and mode == IDLE)):
            fr.kids[g] = False
            return False
        site = self._site.get((fr.fn, g))
        if site is None:
            site = self.addr[fr.fn] + _call_off(self.names[fr.fn], self.names[g], 0, 1, self.size[fr.fn])
        base = (site,) + fr.base
        k = _Frame(g, fr, base, self._intern_t((self.entry[g],) + base), fr.irq, mode)
        fr.kids[g] = k
        self._nframes += 1
        return k

    def _irq_child(self, fr, root):
        """An interrupt entry ``root`` arriving while ``fr`` runs (or in user
        mode when ``fr`` is None)."""
        if fr is None:
            k = self._user_irq.get(root)
            if k is None:
                k = self._user_irq[root] = _Frame(root, None, (), self._intern_t((self.entry[root],)),
                                                  True, UMODE)
                self._nframes += 1
            return k
        key = (root,)                   # call kids are keyed by callee id
        k = fr.kids.get(key)
        if k is None:
            f = fr.fn
            base = (self.addr[f] + _irq_off(self.names[f], self.size[f]),) + fr.base
            k = _Frame(root, fr, base, self._intern_t((self.entry[root],) + base), True,
                       IDLE if fr.mode == IDLE else KMODE)
            fr.kids[key] = k
            self._nframes += 1
        return k

    def _root(self, fn, mode=UMODE):
        k = self._roots.get((fn, mode))
        if k is None:
            k = self._roots[(fn, mode)] = _Frame(fn, None, (), self._intern_t((self.entry[fn],)),
                                                 False, mode)
            self._nframes += 1
        return k

    def _tp_stack(self, fr):
        t = fr.tp
        if t is None:
            f = fr.fn
            t = fr.tp = self._intern_t((self.addr[f] + _tp_off(self.names[f], self.size[f]),) + fr.base)
        return t

    def _maybe_restart_cache(self):
        # Bound memory: forget cached paths (tasks keep their own frames).
        if self._nframes > FRAME_CAP:
            self._event_memo = {}
            self._intern = {}
            self._roots = {}
            self._user_irq = {}
            self._nframes = 0
            for c in self._cpus:
                for fr in [c.halt] + [ts.frame for ts in [c.idle] + c.rq]:
                    while fr is not None:
                        fr.kids = {}
                        fr = fr.parent

    # ---------------------------------------------------------- tasks
    def _spawn_tasks(self):
        k = self.kernel
        sched = k.sched
        rng = k.subsystem_rng("workload")
        ncpu = sched.nr_cpus
        for cpu in range(ncpu):
            idle = sched.idle[cpu]
            ts = self._state(idle, "idle0" if cpu == 0 else "idle", 0.0, False)
            self._cpus.append(_Cpu(cpu, ts))

        def gap(p=0.15):
            if rng.random() < p:
                sched.next_pid += 1 + int(rng.random() * 2)

        def kt(comm, profile, cpu=None, weight=0.2):
            c = cpu if cpu is not None else int(rng.random() * ncpu)
            t = sched.spawn(comm, cpu=c, kthread=True)
            if ":" in profile:                 # "kthread:<thread function>"
                profile = self._variant(*profile.split(":", 1))
            self._add(t, profile, weight, False)
            return t

        def user(comm, profile, weight, tgid=None, cpu=None):
            c = cpu if cpu is not None else int(rng.random() * ncpu)
            t = sched.spawn(comm, cpu=c, tgid=tgid)
            self._add(t, profile, weight, True)
            return t

        sched.next_pid = max(sched.next_pid, 1)
        init = sched.spawn("systemd", cpu=0, pid=1)
        self._add(init, "sleeper", 0.3, True)
        kt("kthreadd", "kthreadd", 0, 0.05)
        kt("pool_workqueue_release", "kthread:kthread_worker_fn", None, 0.02)
        for wq in ("rcu_gp", "sync_wq", "slub_flushwq", "netns"):
            kt("kworker/R-" + wq, "kthread:rescuer_thread", None, 0.01)
        kt("kworker/0:0", "kworker", 0, 1.0)
        kt("kworker/0:0H", "kworker_highpri", 0, 0.2)
        gap(0.6)
        kt("kworker/u%d:0" % (2 * ncpu), "kworker_unbound", None, 0.6)
        kt("kworker/R-mm_percpu_wq", "kthread:rescuer_thread", None, 0.01)
        kt("rcu_tasks_kthread", "rcu_tasks", None, 0.05)
        kt("rcu_tasks_rude_kthread", "rcu_tasks", None, 0.02)
        kt("rcu_tasks_trace_kthread", "rcu_tasks", None, 0.02)
        kt("ksoftirqd/0", "ksoftirqd", 0, 0.4)
        kt("rcu_preempt", "rcu_gp", None, 0.6)
        kt("rcu_exp_par_gp_kthread_worker/0", "kthread:kthread_worker_fn", 0, 0.01)
        kt("rcu_exp_gp_kthread_worker", "kthread:kthread_worker_fn", None, 0.01)
        kt("migration/0", "migration", 0, 0.1)
        kt("idle_inject/0", "cpuhp", 0, 0.01)
        kt("cpuhp/0", "cpuhp", 0, 0.01)
        for cpu in range(1, ncpu):
            kt("cpuhp/%d" % cpu, "cpuhp", cpu, 0.01)
            kt("idle_inject/%d" % cpu, "cpuhp", cpu, 0.01)
            kt("migration/%d" % cpu, "migration", cpu, 0.1)
            kt("ksoftirqd/%d" % cpu, "ksoftirqd", cpu, 0.4)
            gap()
            kt("kworker/%d:0" % cpu, "kworker", cpu, 1.0)
            kt("kworker/%d:0H" % cpu, "kworker_highpri", cpu, 0.2)
        resc = "kthread:rescuer_thread"
        for comm, prof in (("kdevtmpfs", "kthread:devtmpfsd"), ("kworker/R-inet_frag_wq", resc),
                           ("kauditd", "kthread:kauditd_thread"), ("khungtaskd", "khungtaskd"),
                           ("oom_reaper", "kthread:oom_reaper"), ("kworker/R-writeback", resc),
                           ("kcompactd0", "kcompactd"), ("ksmd", "kthread:ksm_scan_thread"),
                           ("khugepaged", "kthread:khugepaged"), ("kworker/R-kintegrityd", resc),
                           ("kworker/R-kblockd", resc), ("kworker/R-blkcg_punt_bio", resc),
                           ("irq/9-acpi", "kthread:irq_thread"), ("kworker/R-tpm_dev_wq", resc),
                           ("kworker/R-md", resc), ("kworker/R-edac-poller", resc),
                           ("watchdogd", "kthread:kthread_worker_fn")):
            gap(0.3)
            kt(comm, prof, None, 0.05 if prof in ("khungtaskd", "kcompactd") else 0.005)
        for cpu in range(ncpu):
            gap()
            kt("kworker/%d:1H" % cpu, "kworker_highpri", cpu, 0.4)
        kt("kswapd0", "kthread:kswapd", None, 0.01)
        for comm in ("kworker/R-kthrotld", "kworker/R-acpi_thermal_pm", "kworker/R-mld",
                     "kworker/R-ipv6_addrconf", "kworker/R-kstrp"):
            gap(0.3)
            kt(comm, resc, None, 0.005)
        sched.next_pid += 20 + int(rng.random() * 40)
        for i in range(1, 3):
            gap(0.5)
            kt("kworker/u%d:%d" % (2 * ncpu, i), "kworker_unbound", None, 0.5)
        sched.next_pid += 30 + int(rng.random() * 60)
        kt("jbd2/vda1-8", "jbd2", None, 0.3)
        kt("kworker/R-ext4-rsv-conversion", resc, None, 0.005)
        for cpu in range(ncpu):
            gap()
            kt("kworker/%d:1" % cpu, "kworker", cpu, 0.8)
        sched.next_pid += 40 + int(rng.random() * 80)
        user("systemd-journal", "journald", 0.4)
        sched.next_pid += 10 + int(rng.random() * 20)
        user("systemd-udevd", "sleeper", 0.1)
        sched.next_pid += 100 + int(rng.random() * 200)
        for comm, prof, w in (("systemd-oomd", "sleeper", 0.2), ("systemd-resolve", "sleeper", 0.15),
                              ("systemd-timesyn", "sleeper", 0.05), ("dbus-broker", "sleeper", 0.2),
                              ("systemd-logind", "sleeper", 0.1), ("crond", "worker", 0.05),
                              ("agetty", "sleeper", 0.02)):
            gap(0.5)
            user(comm, prof, w)
        sshd = user("sshd", "sshd", 0.05)
        sched.next_pid += 200 + int(rng.random() * 400)
        nginx = user("nginx", "sleeper", 0.05)
        for _ in range(max(2, min(4, ncpu))):
            user("nginx", "webserver", 0.8)
        py = user("python3", "worker", 0.4)
        for _ in range(2):
            user("python3", "worker", 0.4, tgid=py.pid)
        sched.next_pid += 500 + int(rng.random() * 1500)
        user("sshd-session", "sshd", 0.3)
        user("sshd-session", "sshd", 0.6)
        user("bash", "shell", 0.5)
        sched.next_pid += 50 + int(rng.random() * 300)
        user("make", "shell", 0.2)
        for cpu in range(ncpu):
            gap(0.7)
            user("cc1", "compiler", 1.5, cpu=cpu)
        # how often a CPU goes idle when its running task sleeps
        for c in self._cpus:
            busy = sum(ts.weight for ts in c.rq)
            c.idle_weight = max(0.5, 0.5 * busy)

    def _variant(self, profile, threadfn):
        """``profile`` whose kthread() runs ``threadfn``."""
        name = "%s:%s" % (profile, threadfn)
        if name not in self._tables:
            t = list(self._tables[profile])
            kthread = self._ids.get(self._resolve("kthread") or "")
            fn = self._ids.get(self._resolve(threadfn) or "")
            if kthread is not None and fn is not None:
                t[kthread] = ([fn], [1.0], 1.0)
            self._tables[name] = t
            self.profiles[name] = dict(self.profiles[profile])
        return name

    def _state(self, task, profile, weight, user):
        prof = self.profiles[profile]
        ts = _TaskState(task, profile, self._tables[profile], prof["root_table"], weight, user)
        self.states[task.pid if task.pid else -1 - task.cpu] = ts
        return ts

    def _add(self, task, profile, weight, user):
        ts = self._state(task, profile, weight, user)
        self._cpus[task.cpu].rq.append(ts)
        return ts

    def _warm_up(self):
        """Start every task asleep where it naturally waits, every CPU idle."""
        rng = self.kernel.subsystem_rng("workload-warmup")
        for c in self._cpus:
            for ts in c.rq:
                c.ts = ts
                self._run(c, rng, until_switch=True)
            c.ts = c.idle
            self._run(c, rng, until_halt=True)
            c.halt = c.idle.frame
            self.kernel.sched.curr[c.cpu] = c.idle.task

    # ---------------------------------------------------------- the walk
    def _pick_next(self, c, rng, prev):
        cands = [ts for ts in c.rq if ts is not prev]
        if prev is c.idle:
            tot = sum(ts.weight for ts in cands)
            if tot <= 0:
                return prev
            x = rng.random() * tot
        else:
            tot = sum(ts.weight for ts in cands) + c.idle_weight
            x = rng.random() * tot
            if x >= tot - c.idle_weight:
                return c.idle
        for ts in cands:
            x -= ts.weight
            if x < 0:
                return ts
        return cands[-1] if cands else c.idle

    def _switch(self, c, rng, fr):
        """``c``'s task entered __schedule at ``fr``: run another one."""
        prev = c.ts
        prev.frame = fr
        prev.phase = RESUME
        nxt = self._pick_next(c, rng, prev)
        if nxt is not prev:
            c.ts = nxt
            self.kernel.sched.curr[c.cpu] = nxt.task
            if self.switch_hooks:
                st = self._tp_stack(fr)
                for hook in self.switch_hooks:
                    hook(c.cpu, prev.task, nxt.task, st)
        return nxt

    def _run(self, c, rng, until_switch=False, until_halt=False, limit=200_000):
        """Advance ``c`` to its next traced call; return (task, frame)."""
        rnd = rng.random
        ts = c.ts
        fr, ph = ts.frame, ts.phase
        table = ts.table
        flags = self.flags
        again = self.again
        maxd = self.max_depth
        pirq = self.p_irq
        ppre = pirq + self.p_preempt
        irqd = maxd - 8
        for _ in range(limit):
            if fr is None:
                # in user space: enter the kernel (or take an interrupt)
                if rnd() < pirq * 4:
                    fr = self._irq_child(None, _pick(self._irq_table, rnd))
                else:
                    fr = self._root(_pick(ts.roots, rnd), ts.mode)
                ph = ENTER
                if flags[fr.fn] & _TRACE and not (until_switch or until_halt):
                    ts.frame, ts.phase = fr, ENTER
                    return ts.task, fr
                continue
            f = fr.fn
            if ph == ENTER:
                fl = flags[f]
                if fl & (_HALT | _SWITCH):
                    if fl & _HALT:
                        if until_halt:
                            ts.frame, ts.phase = fr, ENTER
                            return ts.task, fr
                        if fr.irq or fr.depth > irqd:
                            fr, ph = fr.parent, RESUME
                            continue
                        fr = self._irq_child(fr, _pick(self._irq_table, rnd))
                        if flags[fr.fn] & _TRACE:
                            ts.frame, ts.phase = fr, ENTER
                            return ts.task, fr
                        continue
                    if until_switch:
                        ts.frame, ts.phase = fr, RESUME
                        return ts.task, fr
                    if until_halt:
                        ph = RESUME
                        continue
                    if self.driven:
                        ph = RESUME
                        continue
                    nts = self._switch(c, rng, fr)
                    if nts is not ts:
                        ts = nts
                        fr, ph = ts.frame, ts.phase
                        table = ts.table
                        continue
                    ph = RESUME
                    continue
                e = table[f]
                if e is None or fr.depth >= maxd:
                    fr, ph = fr.parent, RESUME
                    continue
            else:
                r = rnd()
                if r < ppre and not fr.irq and not flags[f] & _SWITCH:
                    if r < pirq:
                        if fr.depth <= irqd:
                            fr = self._irq_child(fr, _pick(self._irq_table, rnd))
                            ph = ENTER
                            if flags[fr.fn] & _TRACE and not (until_switch or until_halt):
                                ts.frame, ts.phase = fr, ENTER
                                return ts.task, fr
                            continue
                    elif ts is not c.idle and not (until_switch or until_halt or self.driven):
                        # the task sleeps or its time slice ends
                        ts.frame, ts.phase = fr, ph
                        self._event_switch(c, rng, preempt=r < pirq + 0.6 * self.p_preempt)
                        ts = c.ts
                        fr, ph = ts.frame, ts.phase
                        table = ts.table
                        continue
                e = table[f]
                if e is None or fr.depth >= maxd or rnd() >= again[f]:
                    fr = fr.parent
                    continue
            # call one of f's callees
            callees, cum, total = e
            g = callees[bisect_right(cum, rnd() * total)]
            k = fr.kids.get(g)
            if k is None:
                k = self._child(fr, g) if g >= 0 else False
            if k is False:              # "_", or not from this mode: return
                fr, ph = fr.parent, RESUME
                continue
            fr = k
            ph = ENTER
            if flags[g] & _TRACE and not (until_switch or until_halt):
                ts.frame, ts.phase = fr, ENTER
                return ts.task, fr
        ts.frame, ts.phase = fr, ph
        return ts.task, fr

    # ---------------------------------------------------------- public API
    def sample(self, rng, cpu):
        """One traced function call on ``cpu``: (running task, its stack)."""
        if self._nframes > FRAME_CAP:
            self._maybe_restart_cache()
        task, fr = self._run(self._cpus[cpu], rng)
        return task, fr.stack

    def follow(self, cpu, task) -> None:
        """The machine runs ``task`` on ``cpu`` now: the walk of that CPU
        goes on in that task's own kernel stack (the idle task's for pid 0)."""
        self.driven = True
        c = self._cpus[cpu]
        if task.pid:
            ts = self.states.get(task.pid)
            if ts is None:                 # a forked command, a real process: a shell's paths
                ts = self._state(task, "shell", 0.0, True)
                self._adopted.append(task.pid)
                if len(self._adopted) > ADOPTED_KEPT:   # forget exited ones
                    old = self._adopted.popleft()
                    if old not in self.kernel.sched.tasks:
                        self.states.pop(old, None)
        else:
            ts = c.idle
        c.ts = ts
        # woken up: it returns from __schedule() and from the function that
        # called it (schedule(), schedule_idle() ...), so that its next
        # sleep enters them again
        top = None
        f = ts.frame
        while f is not None:
            if self.flags[f.fn] & _SWITCH:
                top = f
            f = f.parent
        if top is not None and top.parent is not None:
            ts.frame, ts.phase = top.parent.parent, RESUME

    def switch_path(self, rng, cpu) -> tuple[tuple, tuple]:
        """The running task goes to __schedule(): (the stack where
        ``sched_switch`` fires, the stacks of the traced functions it
        entered on the way there, outermost first)."""
        c = self._cpus[cpu]
        ts = c.ts
        key = (ts.frame, ts is c.idle, "\0switch")
        seen = self._event_memo.get(key)
        if seen is not None and len(seen) >= EVENT_MEMO:
            got = seen[int(rng.random() * len(seen))]
            if got is None:
                return (), ()
            n, entered = got
            ts.frame, ts.phase = n, RESUME
            return self._tp_stack(n), entered
        got = self._switch_path(c, rng)
        if len(self._event_memo) > EVENT_MEMO_KEYS:
            self._event_memo.clear()
        self._event_memo.setdefault(key, []).append(got)
        if got is None:
            return (), ()
        return self._tp_stack(got[0]), got[1]

    def _switch_path(self, c, rng):
        before = set()
        f = c.ts.frame
        while f is not None:
            before.add(f)
            f = f.parent
        n = self._event_path(c, rng, "sched_switch", self.events["sched_switch"])
        if n is None:
            return None
        entered = []
        f = n
        while f is not None and f not in before:
            if self.flags[f.fn] & _TRACE:
                entered.append(f.stack)
            f = f.parent
        entered.reverse()
        c.ts.frame, c.ts.phase = n, RESUME
        return n, tuple(entered)

    def event_stack(self, rng, cpu, kind) -> tuple:
        """The stack of the running task (or an interrupt on top of it)
        at a tracepoint of ``kind``, without switching tasks."""
        c = self._cpus[cpu]
        targets = self.events.get(kind)
        if targets is None:                # no path in the graph: where the task is
            fr = c.ts.frame or c.halt
            return fr.stack if fr is not None else ()
        ts = c.ts
        # where a task at this frame gets to first: sampled EVENT_MEMO times,
        # then drawn from those samples (the walk costs ~50 us a path)
        key = (ts.frame, ts is c.idle, kind)
        seen = self._event_memo.get(key)
        if seen is not None and len(seen) >= EVENT_MEMO:
            n = seen[int(rng.random() * len(seen))]
            if n is not None:
                ts.frame, ts.phase = n, ENTER
                return self._tp_stack(n)
            fr = ts.frame or c.halt
            return fr.stack if fr is not None else ()
        before = ts.frame
        stack = self._event_noswitch(c, rng, kind, targets)[1]
        if len(self._event_memo) > EVENT_MEMO_KEYS:
            self._event_memo.clear()
        self._event_memo.setdefault(key, []).append(ts.frame if ts.frame is not before else None)
        return stack

    def current(self, cpu):
        """The task running on ``cpu``."""
        return self._cpus[cpu].ts.task

    def stacks_for_event(self, rng, cpu, kind):
        """(task, stack) for a tracepoint ``kind`` firing on ``cpu``.

        The running task returns from a few of its calls and goes down a
        path to one of the functions where the event fires (or an interrupt
        arriving now does); ``stack[0]`` is the tracepoint site in it.  For
        ``sched_switch`` the task is the one switched out and the switch
        happens (``switch_hooks`` see it too).  Now and then the running
        task sleeps before the event, so that events come from every task;
        never for ``NOSWITCH_KINDS`` (``sched_waking``, ``sched_wakeup``),
        whose stacks leave the running task of every CPU as it was.
        """
        targets = self.events.get(kind)
        if targets is None:
            raise ValueError("unknown event kind %r" % (kind,))
        if self._nframes > FRAME_CAP:
            self._maybe_restart_cache()
        c = self._cpus[cpu]
        if kind in NOSWITCH_KINDS:
            return self._event_noswitch(c, rng, kind, targets)
        rnd = rng.random
        flags = self.flags
        for _ in range(4):
            # a task just switched in runs on a little before anything else
            ts = c.ts
            if ts is c.idle or ts.frame is None or not flags[ts.frame.fn] & _SWITCH:
                break
            self._run(c, rng)
        if kind == "sched_switch":
            return self._event_switch(c, rng, preempt=c.ts is not c.idle
                                      and rnd() < self.p_event_preempt)
        if rnd() < self.p_event_switch and not self.driven:
            self._event_switch(c, rng)
        n = self._event_path(c, rng, kind, targets)
        ts = c.ts
        if n is None:                      # nothing gets there: plain sample
            task, fr = self._run(c, rng)
            return task, self._tp_stack(fr)
        ts.frame, ts.phase = n, ENTER
        return ts.task, self._tp_stack(n)

    def call_ids(self, addrs) -> frozenset:
        """Ids of the traced functions of the graph that start at one of
        ``addrs`` (function addresses): the ones ``calls_to()`` can reach."""
        by_addr = self._fid_by_addr
        if by_addr is None:
            by_addr = self._fid_by_addr = {}
            for i, a in enumerate(self.addr):
                if self.flags[i] & _TRACE:
                    by_addr.setdefault(a, i)
        return frozenset(by_addr[a] for a in addrs if a in by_addr)

    def call_profile(self, n_per_cpu: int = 16000):
        """How often each traced function is called: per CPU, ``{id: calls}``
        among ``n_per_cpu`` calls of an unrecorded run of the walk, and
        ``n_per_cpu``.  The run is done once, on the side: every task and
        CPU is put back where it was, and no switch hook hears of it."""
        if self._call_counts is None:
            sched = self.kernel.sched
            saved_cpus = [(c, c.ts, c.halt) for c in self._cpus]
            saved_tasks = [(ts, ts.frame, ts.phase) for c in self._cpus
                           for ts in [c.idle] + c.rq]
            saved_curr = list(sched.curr)
            hooks, self.switch_hooks = self.switch_hooks, []
            rng = self.kernel.subsystem_rng("workload-call-profile")
            counts = []
            try:
                for c in self._cpus:
                    hits: dict[int, int] = {}
                    for _ in range(n_per_cpu):
                        if self._nframes > FRAME_CAP:
                            self._maybe_restart_cache()
                        _task, fr = self._run(c, rng)
                        hits[fr.fn] = hits.get(fr.fn, 0) + 1
                    counts.append(hits)
            finally:
                self.switch_hooks = hooks
                for c, cts, halt in saved_cpus:
                    c.ts, c.halt = cts, halt
                for ts, frame, phase in saved_tasks:
                    ts.frame, ts.phase = frame, phase
                sched.curr[:] = saved_curr
            self._call_counts = (counts, n_per_cpu)
        return self._call_counts

    def calls_to(self, rng, cpu, targets: frozenset):
        """(task, stack) of the next call on ``cpu`` of one of the functions
        ``targets`` (ids from ``call_ids()``), or None when nothing running
        there gets to one.  Like ``stacks_for_event()``: the CPU first goes
        on by one call, now and then its task sleeps, then the running task
        (or an interrupt) walks down a path to a target.  ``stack[0]`` is the
        target's entry (as in ``sample()``), where the task now is."""
        if not targets:
            return None
        if self._nframes > FRAME_CAP:
            self._maybe_restart_cache()
        c = self._cpus[cpu]
        self._run(c, rng)                  # whatever it was doing goes on
        if rng.random() < self.p_event_switch and not self.driven:
            self._event_switch(c, rng)
        for _ in range(CALL_TRIES):
            n = self._event_path(c, rng, targets, targets)
            if n is None:
                n = self._irq_path(c, rng, targets, targets)
            if n is not None:
                break
            if self.driven:
                return None                # who runs is the machine's to say
            # nothing running here gets there (an idle CPU, a task that
            # never makes such calls): the task sleeps, another one runs
            self._event_switch(c, rng)
        else:
            return None
        ts = c.ts
        ts.frame, ts.phase = n, ENTER
        return ts.task, n.stack

    def _event_noswitch(self, c, rng, kind, targets):
        """(task, stack) for an event that comes with no context switch:
        the running task (or an interrupt on top of it) gets to a target."""
        ts = c.ts
        n = self._event_path(c, rng, kind, targets)
        if n is None:
            n = self._irq_path(c, rng, kind, targets)
        if n is None:                       # never with the bundled graph
            n = ts.frame or c.halt
            return ts.task, self._tp_stack(n) if n is not None else ()
        ts.frame, ts.phase = n, ENTER
        return ts.task, self._tp_stack(n)

    def _irq_path(self, c, rng, kind, targets):
        """A target reached by an interrupt arriving where the running task
        is (or further out, where there is room for it), or None."""
        rnd = rng.random
        ts = c.ts
        flags = self.flags
        dist, rtab, _, _, _, irq_opts = self._reach(ts.profile, kind)
        if not irq_opts:
            return None
        at = ts.frame
        if ts is c.idle and c.halt is not None and (at is None or flags[at.fn] & _SWITCH):
            at = c.halt
        while at is not None and (at.irq or flags[at.fn] & _SWITCH):
            at = at.parent
        while True:
            if at is None and not ts.user:
                return None                 # kernel threads are never in user mode
            opts = list(irq_opts)
            while opts:
                tot = sum(w for _, w in opts)
                g = _choose(opts, rnd() * tot)
                got = self._descend(self._irq_child(at, g), targets, rtab, dist, rnd)
                if got is not None:
                    return got
                opts = [o for o in opts if o[0] != g]
            if at is None:
                return None
            at = at.parent

    def _event_switch(self, c, rng, preempt=False):
        """The running task sleeps (or is preempted): (prev task, stack)."""
        targets = self.events["sched_switch"]
        n = self._event_path(c, rng, "sched_switch", targets, preempt)
        ts = c.ts
        if n is None:
            task, fr = self._run(c, rng)
            return task, self._tp_stack(fr)
        prev = ts.task
        st = self._tp_stack(n)
        self._switch(c, rng, n)
        return prev, st

    def _event_path(self, c, rng, kind, targets, irq=False):
        for _ in range(4):
            n = self._event_path_once(c, rng, kind, targets, irq)
            if n is not None:
                return n
            irq = False
        # still nothing: the nearest caller that can get there, if any
        ts = c.ts
        dist, rtab, _, _, root_opts, _ = self._reach(ts.profile, kind)
        n = ts.frame
        while n is not None:
            if n.fn not in targets and rtab[n.fn] is not None:
                got = self._descend(n, targets, rtab, dist, rng.random)
                if got is not None:
                    return got
            n = n.parent
        if ts.user:
            for g, _ in root_opts:
                got = self._descend(self._root(g, ts.mode), targets, rtab, dist, rng.random)
                if got is not None:
                    return got
        return None

    def _event_path_once(self, c, rng, kind, targets, irq=False):
        """A frame of one of ``targets`` the running task gets to next.

        Sampled from the walk conditioned on reaching a target: the task
        returns from its calls until one of its callers goes on to reach
        one (with the probability it does), then calls down to it choosing
        each callee by weight times its chance of getting there."""
        rnd = rng.random
        ts = c.ts
        flags = self.flags
        idle = ts is c.idle
        if idle and c.halt is not None and (ts.frame is None or flags[ts.frame.fn] & _SWITCH):
            ts.frame, ts.phase = c.halt, ENTER      # back to waiting
        reach = self._reach(ts.profile, kind)
        dist, rtab, prem, _P, root_opts, irq_opts = reach
        maxd = self.max_depth
        fr = ts.frame
        n = fr
        cand = None
        fresh = False
        while not irq:
            if n is None:
                fresh = ts.user
                break
            f = n.fn
            pr = prem[f]
            if pr and f not in targets and dist[f] + n.depth <= maxd and rnd() < pr:
                cand = n
                break
            if flags[f] & _LOOP:
                break
            n = n.parent
        # where an interrupt would arrive
        if cand is not None or irq:
            at = fr
            while at is not None and (at.irq or flags[at.fn] & _SWITCH):
                at = at.parent
        elif fresh or n is None:
            at = None
        elif idle and c.halt is not None:
            ts.frame, ts.phase = c.halt, ENTER
            at = c.halt
        else:
            at = n
        n = cand
        if n is None or rnd() < self.p_event_irq:
            # enter the kernel afresh, or take an interrupt that gets there
            opts = root_opts if fresh else ()
            iopts = ()
            if at is None or (not at.irq and at.depth + 8 < maxd):
                depth = at.depth if at is not None else 0
                iopts = [o for o in irq_opts if dist[o[0]] + depth < maxd]
            rtot = sum(o[1] for o in opts)
            itot = sum(o[1] for o in iopts)
            if rtot or n is not None:
                itot *= 0.1
            if rtot + itot > 0:
                x = rnd() * (rtot + itot)
                if x < rtot:
                    n = self._root(_choose(opts, x), ts.mode)
                else:
                    n = self._irq_child(at, _choose(iopts, (x - rtot) / (itot / sum(o[1] for o in iopts))))
        for start in (n, cand) if n is not cand else (n,):
            if start is not None:
                got = self._descend(start, targets, rtab, dist, rnd)
                if got is not None:
                    return got
        return None

    def _descend(self, n, targets, rtab, dist, rnd):
        """Call down from ``n`` to one of ``targets`` (None if stuck)."""
        maxd = self.max_depth
        while n.fn not in targets:
            e = rtab[n.fn]
            if e is None:
                return None
            room = maxd - n.depth - 1
            callees, cum, total, far = e
            if far <= room:
                g = callees[bisect_right(cum, rnd() * total)]
                k = n.kids.get(g)
                if k is None:
                    k = self._child(n, g)
                if k is not False:
                    n = k
                    continue
            # near the depth limit, or a callee not allowed in this mode
            opts = [(g, cum[i] - (cum[i - 1] if i else 0.0)) for i, g in enumerate(callees)
                    if dist[g] <= room]
            while True:
                if not opts:
                    return None
                tot = sum(w for _, w in opts)
                x = rnd() * tot
                for i, (g, w) in enumerate(opts):
                    x -= w
                    if x < 0:
                        break
                k = n.kids.get(g)
                if k is None:
                    k = self._child(n, g)
                if k is not False:
                    break
                del opts[i]
            n = k
        return n

    def _reach(self, profile, kind):
        """How a task of ``profile`` gets to the sites of ``kind``: per
        function, the fewest calls to one (dist), its callees weighted by
        their chance of getting there (rtab), the chance it still gets there
        after its current call returns (prem), and that chance on entry (p)."""
        key = (profile, kind)
        r = self._reach_cache.get(key)
        if r is None:
            if isinstance(kind, frozenset):
                self._note_target_set(kind)
            dist, rtab, prem, P = self._compute_reach(self._tables[profile], kind)
            targets = self._targets_of(kind)
            maxd = self.max_depth

            def opts(table):
                out = []
                for g, w in zip(*_table_items(table)):
                    if g in targets:
                        out.append((g, w))
                    elif rtab[g] is not None and dist[g] < maxd and P[g]:
                        out.append((g, w * P[g]))
                return out

            r = (dist, rtab, prem, P, opts(self.profiles[profile]["root_table"]),
                 opts(self._irq_table))
            self._reach_cache[key] = r
        return r

    def _note_target_set(self, kind):
        """Keep the reach tables of the last few target sets only."""
        kinds = self._target_sets
        if kind in kinds:
            return
        kinds.append(kind)
        if len(kinds) > TARGET_SETS_KEPT:
            old = kinds.pop(0)
            for key in [k for k in self._reach_cache if k[1] == old]:
                del self._reach_cache[key]

    def _targets_of(self, kind):
        """The function ids a reach ``kind`` leads to: an event kind's sites,
        or the set itself when ``kind`` is a frozenset of ids (calls_to)."""
        return kind if isinstance(kind, frozenset) else self.events[kind]

    def _compute_reach(self, table, kind):
        targets = self._targets_of(kind)
        nf = len(self.names)
        flags = self.flags
        again = self.again
        blocked = [bool(flags[f] & _SWITCH) and f not in targets for f in range(nf)]
        # probability of reaching a target from each function (cycles cut)
        P = [None] * nf
        H = [0.0] * nf
        busy = [False] * nf

        def prob(f):
            v = P[f]
            if v is not None:
                return v
            if f in targets:
                P[f] = 1.0
                return 1.0
            e = table[f]
            if e is None or blocked[f] or busy[f]:
                return 0.0
            busy[f] = True
            callees, cum, total = e
            h = 0.0
            prev = 0.0
            for g, c in zip(callees, cum):
                pg = prob(g) if g >= 0 else 0.0
                if pg:
                    h += (c - prev) * pg
                prev = c
            h /= total
            busy[f] = False
            H[f] = h
            a = again[f]
            P[f] = v = _hit(h, a)
            return v

        import sys
        old = sys.getrecursionlimit()
        sys.setrecursionlimit(max(old, 20000))
        try:
            for f in range(nf):
                prob(f)
        finally:
            sys.setrecursionlimit(old)
        # fewest calls to a target, for the depth limit
        callers: dict[int, list[int]] = {}
        for f in range(nf):
            e = table[f]
            if e is None or blocked[f]:
                continue
            for g in e[0]:
                if g >= 0:
                    callers.setdefault(g, []).append(f)
        dist = [99] * nf
        for t in targets:
            dist[t] = 0
        frontier = list(targets)
        while frontier:
            nxt = []
            for g in frontier:
                for f in callers.get(g, ()):
                    if dist[f] == 99:
                        dist[f] = dist[g] + 1
                        nxt.append(f)
            frontier = nxt
        rtab = [None] * nf
        prem = [0.0] * nf
        for f in range(nf):
            e = table[f]
            if e is None or blocked[f]:
                continue
            callees, cum, total = e
            edges = []
            prev = 0.0
            for g, c in zip(callees, cum):
                w = (c - prev) * (P[g] or 0.0) if g >= 0 else 0.0
                prev = c
                if w > 0 and dist[g] < 99:
                    edges.append((g, w))
            if edges:
                cum2 = []
                acc = 0.0
                for _, w in edges:
                    acc += w
                    cum2.append(acc)
                rtab[f] = ([g for g, _ in edges], cum2, acc, max(dist[g] for g, _ in edges))
                a = again[f]
                h = H[f] if f not in targets else acc / total
                prem[f] = _hit(h, a) if a >= 1.0 else (
                    1.0 - (1.0 - a) / (1.0 - a * (1.0 - h)))
        return dist, rtab, prem, P

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
                if e is not None and room > 1 and not self.flags[f] & _SWITCH:
                    for g in set(e[0]) - {-1}:
                        r += count(table, g, room - 1)
                memo[key] = r
            return r

        irq_roots = sorted(set(self._irq_table[0]))
        irq_by_room = {}

        def irq_count(room):
            r = irq_by_room.get(room)
            if r is None:
                r = irq_by_room[room] = sum(count(self._base_table, g, room) for g in irq_roots)
            return r

        total = irq_count(maxd)
        for pname, prof in self.profiles.items():
            table = self._tables[pname]
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
                    if e is None or d >= maxd or self.flags[f] & _SWITCH:
                        continue
                    for g in set(e[0]) - {-1}:
                        nxt[g] = nxt.get(g, 0) + n
                level = nxt
                if not level:
                    break
        return total

    def tasks(self):
        """The simulated tasks (not the idle tasks), in pid order."""
        return sorted((ts.task for c in self._cpus for ts in c.rq), key=lambda t: t.pid)

    def profile_of(self, pid: int) -> str | None:
        ts = self.states.get(pid)
        return ts.profile if ts else None

    def function_ip(self, stack) -> int:
        """ftrace's ``ip`` of the function a sample() stack was taken in."""
        return stack[0] - FENTRY_RET + FENTRY_IP


# ---------------------------------------------------------------- helpers
def _hit(h, a):
    """Chance that a function which makes 1 + Geometric(a) calls, each
    getting somewhere with chance h, gets there."""
    if h <= 0.0:
        return 0.0
    if a >= 1.0:
        return 1.0
    return 1.0 - (1.0 - h) * (1.0 - a) / (1.0 - a * (1.0 - h))


def _choose(opts, x):
    for g, w in opts:
        x -= w
        if x < 0:
            return g
    return opts[-1][0]


def _pick(table, rnd):
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


def _table_items(table):
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


def _call_off(caller, callee, k, n, size):
    """Return address of the k-th of n call sites in a function of ``size``
    bytes: spread over the body in listed order, jittered per edge."""
    lo = FENTRY_RET + 5
    hi = size - 2
    if hi <= lo:
        return max(1, size // 2)
    span = (hi - lo) / n
    j = _h(caller, callee) / 2**32
    return int(lo + span * (k + 0.15 + 0.7 * j))


def _irq_off(name, size):
    lo = FENTRY_RET + 1
    hi = size - 1
    if hi <= lo:
        return max(1, size // 2)
    return lo + _h("irq", name) % (hi - lo)


def _tp_off(name, size):
    lo = FENTRY_RET + 5
    hi = size - 2
    if hi <= lo:
        return max(1, size // 2)
    return lo + int((hi - lo) * (0.3 + 0.4 * (_h("tp", name) / 2**32)))


def workload_init(kernel) -> None:
    kernel.workload = Workload(kernel)
