"""The way up from an allocation's call site to where its task entered the kernel.

An allocator's tracepoint (``kmalloc``, ``kmem_cache_alloc``) fires in the
allocator, called from the function holding the allocation tag: the call
site /proc/allocinfo lists.  Its stack goes from there up the callers that
function really has to an entry point of the task that runs (a system
call, a kernel thread's start, a page fault) or of an interrupt: a real
kernel never records a stack that stops short of one.

``CallSites.stack()`` finds such a way for the task running on a CPU: a
call site in a function the walk graph has climbs the graph's callers
(weighted by the task's profile); one the graph lacks first climbs its
callers in the source (``AllocCallers``) to a function the graph has.
Every step up goes only to a caller the task's entry points get to
(``_reach_of()``: the functions reachable from them in the profile's
table, each with its fewest calls from one), so a way is found whenever
there is one.  An allocation that may sleep (``task_only``: GFP_KERNEL)
is the task's own: its way never passes a function an interrupt enters by
(``INTERRUPT_FUNCS``; a softirq run on the task's stack is not the task).
``reaches(pid, site)`` tells whether a task can allocate at a site that
way at all, for the allocation workload to place its allocations on tasks
that can.

Cheap by design: reach sets are per (profile, entry points), a few dozen;
whether a source function leads to a reachable graph function is a
boolean per (reach set, function); a task's way from a site is kept and
mostly reused (``WAY_KEPT``), its frames built once.
"""

from __future__ import annotations

from collections import deque

# a call site's way up its callers (walk_reference.use_reference swaps it)
from ..kernel.irq import INTERRUPT_FUNCS
from ..kernel.walkgraph import tp_off
from ._reach import caller_arrays, way_up

WAY_KEPT = 0.9             # a task's next allocation from a site goes its last way
WAYS_KEPT = 100_000        # kept ways before the memo restarts
# tasks whose ways are kept before the oldest is looked at: gone from the
# task table (an exited task stays there for fork.DEAD_KEPT exits), its ways
# go (an exited task allocates no more).  Measured with everything on, seed
# 3: ~8.7 new ways (~4.6 a task) and ~1.9 exited tasks a simulated second,
# ~600 bytes a way (a census); kept for good that would be ~3 MB in 10
# simulated minutes and ~57 MB at WAYS_KEPT
WAY_PIDS_LOOKED_AT = 64
# of them looked at each time a task has its first way: with k looks the
# tasks gone that still have ways are about 1/(k - 1) of those there (with
# one they would grow without end: most looks find a task still there)
WAY_LOOKS = 3
TRIES = 8                  # random climbs tried before giving up


class CallSites:
    """Ways up from call sites in the resolved graph ``wg`` for the tasks of
    ``walk``, with ``frames`` and the source callers ``sources``
    (``AllocCallers``)."""

    def __init__(self, wg, frames, walk, sources):
        self.wg = wg
        self.ks = wg.ks
        self.frames = frames
        self.walk = walk
        self.sources = sources
        self._callers: dict = {}             # profile -> its CallerTable
        self._reach: dict = {}               # (profile, entries, task_only) -> reachable ids
        self._led: dict = {}                 # (reach key, name) -> leads to a reachable graph function
        self._fronts: dict = {}              # (name, task_only) -> the graph functions its ways up meet
        self._ways: dict = {}                # pid -> {(name, task_only): way}
        self._nways = 0                      # how many ways _ways holds
        self._way_pids: deque = deque()      # its pids, the oldest looked at first
        self._names: dict = {}               # site -> its function's symbol name
        self._keys: dict = {}                # id(roots) -> its entries (the reach key)
        self._all_roots = None               # reachable(): every task's entries
        self._allocator: dict = {}           # (name, kind) -> the allocator's stack entry
        self._ups: dict = {}                 # (reach key, id) -> its callers the entries reach
        self._reaches: dict = {}             # (profile, id(roots), name) -> reaches()' answer

    # ------------------------------------------------------------ public
    def stack(self, rng, c, kind, site: int, task_only=False):
        """The stack at a tracepoint of ``kind`` (an allocator's) called from
        the function holding the return address ``site``, for the task
        running on CPU ``c`` (a walk ``Cpu``), or an interrupt on top of it
        unless ``task_only``.  None when no way up reaches an entry.  The
        task's own walk does not move (moving it there made the other
        events' paths ~25% costlier to draw, their memo keyed by it)."""
        name = self._name(site)
        allocs = self.wg.events.get(kind)
        if name is None or not allocs:
            return None
        ts = c.ts
        # a task allocating again from the same place mostly does it the
        # same way (one system call, a loop): its last way up, kept
        pid = ts.task.pid
        mine = self._ways.get(pid)
        key = (name, task_only)
        way = mine.get(key) if mine is not None else None
        if way is None or rng.random() >= WAY_KEPT:
            way = self._new_way(rng, ts, name, task_only)
            self._keep_way(pid, key, way)
        irq, chain, above, rets = way
        if chain is None:
            return None
        if irq:                    # an interrupt on top of what the task does
            under = ts.frame or c.halt
            if under is None:
                return None
            fr = self._frame_of(self.frames.irq_child(under, chain[0]), chain)
            if fr is None:
                return None
            above = fr.stack[1:]
        top = self._allocator.get((name, kind))
        if top is None:
            wg = self.wg
            # the allocator it calls: one the graph has it call, else the kind's first
            fid = wg.ids.get(name)
            called = [a for a in allocs if (fid, a) in wg.site]     # (no generator: cpdef)
            a = min(called) if called else min(allocs)
            top = self._allocator[(name, kind)] = wg.addr[a] + tp_off(wg.names[a], wg.size[a])
        return (top, site) + rets + above

    def _keep_way(self, pid, key, way) -> None:
        """``way`` is the task ``pid``'s last from ``key`` (the site's
        function, task only)."""
        ways = self._ways
        if self._nways > WAYS_KEPT:
            ways.clear()
            self._way_pids.clear()
            self._nways = 0
        mine = ways.get(pid)
        if mine is None:
            mine = ways[pid] = {}
            self._way_pids.append(pid)
            if len(self._way_pids) > WAY_PIDS_LOOKED_AT:
                for _ in range(WAY_LOOKS):
                    self._forget_exited()
        if key not in mine:
            self._nways += 1
        mine[key] = way

    def _forget_exited(self) -> None:
        """The oldest task with ways: forgotten if gone from the task
        table, else looked at again later."""
        old = self._way_pids.popleft()
        if old in self.walk.kernel.sched.tasks:
            self._way_pids.append(old)
        else:
            self._nways -= len(self._ways.pop(old))

    def reaches(self, pid: int, site: int) -> bool:
        """Whether the task ``pid`` gets, in task context, to the function
        holding return address ``site`` (a task the walk does not know: a
        shell's command).  True when that function is unknown (no symbol)."""
        name = self._name(site)
        if name is None:
            return True
        ts = self.walk.states.get(pid)
        if ts is not None:
            profile, roots = ts.profile, ts.roots
        else:                          # the walk will run it as a shell's (Walk.follow)
            shell = self.wg.profiles.get("shell")
            if shell is None:
                return True
            profile, roots = "shell", shell["root_table"]
        # (an answer holds as long as the graph: reach sets and root tables are kept)
        key = (profile, id(roots), name)
        got = self._reaches.get(key)
        if got is None:
            got = self._reaches[key] = (self._leads_to(name, profile, roots, True)
                                        or self._leads_to(name, None, roots, True))
        return got

    def reachable(self, site: int, task_only=False) -> bool:
        """Whether any task (or an interrupt, unless ``task_only``) can get
        to the function holding ``site``."""
        name = self._name(site)
        if name is None:
            return True
        if self._all_roots is None:
            shell = self.wg.profiles.get("shell")
            entries = set(shell["root_table"][0]) if shell is not None else set()
            for ts in self.walk.states.values():
                if ts.task.pid:
                    entries.update(ts.roots[0])
            self._all_roots = (sorted(entries),)
        if self._leads_to(name, None, self._all_roots, task_only):
            return True
        return not task_only and self._leads_to(name, None, self.wg.irq_table)

    # ------------------------------------------------------------ ways
    def _name(self, site):
        name = self._names.get(site)
        if name is None:
            hit = self.ks.lookup(site)
            name = self._names[site] = hit[0] if hit is not None else ""
        return name or None

    def _new_way(self, rng, ts, name, task_only):
        """(in an interrupt, ids from an entry to the graph function the way
        goes through, the stack above that function's frame (None in an
        interrupt: built on what runs; a stack, not the frame, so that the
        frame cache can restart), the return addresses of the source callers
        below it): the task's
        own calls first, else any the kernel makes (a compiler rarely sends
        packets, but the allocation is its), else an interrupt's (unless
        ``task_only``); (False, None, None, ()) when there is none."""
        wg = self.wg
        tries = [(ts.profile, ts.roots, False), (None, ts.roots, False)]
        if not task_only:
            tries.append((ts.profile, wg.irq_table, True))
        for profile, roots, irq in tries:
            own = task_only and not irq
            up = self._climb(rng, name, profile, roots, own)
            if up is None:
                continue
            chain = self._way_up(rng, profile, roots, wg.ids[up[-1]], own)
            if chain is None:
                continue
            rets = tuple(self.sources.ret(g, f) for f, g in zip(up, up[1:]))
            if irq:
                return True, chain, None, rets
            fr = self._frame_of(self.frames.root(chain[0], ts.mode), chain)
            if fr is not None:
                return False, chain, fr.stack[1:], rets
        return False, None, None, ()

    def _frame_of(self, fr, chain):
        """The frame of ``chain``'s last function, going down from frame
        ``fr`` (its first); None where a call cannot be made in that mode."""
        child = self.frames.child
        for g in chain[1:]:
            k = child(fr, g)
            if k is False:
                return None
            fr = k
        return fr

    def _reach_of(self, profile, roots, task_only=False):
        """(key, {id: fewest calls from an entry}) of the functions reachable
        from the entries ``roots`` in the profile's table (None: the
        kernel's common one); through no interrupt's entry if ``task_only``."""
        # (root tables live as long as the graph: their ids stay theirs)
        ents = self._keys.get(id(roots))
        if ents is None:
            ents = self._keys[id(roots)] = frozenset(roots[0] if roots is not None else ())
        key = (profile, ents, task_only)
        got = self._reach.get(key)
        if got is None:
            tables = self.wg.base_table if profile is None else self.wg.tables[profile]
            level = sorted(set(roots[0])) if roots is not None else []
            dist = dict.fromkeys(level, 0)
            barred = self._barred() if task_only else ()
            d = 0
            while level:
                d += 1
                nxt = []
                for f in level:
                    table = tables[f]
                    if table is None:
                        continue
                    for g in table[0]:                  # (its callees)
                        if g >= 0 and g not in dist and g not in barred:
                            dist[g] = d
                            nxt.append(g)
                level = nxt
            got = self._reach[key] = (key, dist)
        return got

    def _barred(self):
        """Graph ids of the functions an interrupt enters by."""
        ids = self.wg.ids
        return frozenset(ids[n] for n in INTERRUPT_FUNCS if n in ids)

    def _leads_to(self, name, profile, roots, task_only=False) -> bool:
        """Whether function ``name`` (a symbol name) is reachable from
        ``roots`` (through no interrupt's entry if ``task_only``): in the
        graph, or through its source callers."""
        key, reach = self._reach_of(profile, roots, task_only)
        return self._leads(name, key, reach)

    def _leads(self, name, key, reach) -> bool:
        """Whether a way up from ``name`` meets a graph function in
        ``reach`` (of reach ``key``: ``_reach_of``)."""
        memo = self._led.get((key, name))
        if memo is None:
            memo = self._led[(key, name)] = any(f in reach for f in self._frontier(name, key[2]))
        return memo

    def _frontier(self, name, task_only) -> tuple:
        """The graph functions that ``name``'s ways up meet: its own id
        when the graph has it, else those its source callers' ways meet,
        through functions the graph lacks (and no interrupt's entry if
        ``task_only``).  The same for every task: what a task reaches is
        then a lookup in its reach set (``_leads``)."""
        key = (name, task_only)
        got = self._fronts.get(key)
        if got is None:
            ids = self.wg.ids
            meets = set()
            seen = {name}
            todo = [name]
            while todo:
                n = todo.pop()
                fid = ids.get(n)
                if fid is not None:
                    meets.add(fid)
                elif not (task_only and n in INTERRUPT_FUNCS):
                    for c in self.sources.callers(n):
                        if c not in seen:
                            seen.add(c)
                            todo.append(c)
            got = self._fronts[key] = tuple(sorted(meets))
        return got

    def _climb(self, rng, name, profile, roots, task_only):
        """Symbol names from ``name`` up its source callers to a graph
        function reachable from ``roots`` ([name] when it is one), each
        caller drawn among those that lead there (nearer ones likelier);
        None when none does."""
        key, reach = self._reach_of(profile, roots, task_only)
        if not self._leads(name, key, reach):
            return None
        up = [name]
        ids = self.wg.ids
        while name not in ids:
            ups = [c for c in self.sources.callers(name)
                   if c not in up and self._leads(c, key, reach)]
            if not ups:
                return None
            # the first callers are the nearest to the graph: weigh them up
            x = rng.random() * sum(1.0 / (i + 1) for i in range(len(ups)))
            for i, c in enumerate(ups):
                x -= 1.0 / (i + 1)
                if x < 0:
                    break
            up.append(c)
            name = c
        return up

    def _way_up(self, rng, profile, roots, fid, task_only):
        """Function ids from an entry of ``roots`` down to ``fid``, each
        calling the next in the profile's table (None: the kernel's common
        one), through functions the entries reach; None if none is found."""
        rev = self._callers.get(profile)
        if rev is None:
            tables = self.wg.base_table if profile is None else self.wg.tables[profile]
            rev = self._callers[profile] = CallerTable(tables)
        key, reach = self._reach_of(profile, roots, task_only)
        if fid not in reach:
            return None
        # compiled (_reach.way_up; reach_reference.way_up is its specification)
        return way_up(self._ups, key, rev, reach, key[1], fid, self.wg.max_depth, TRIES, rng.random)


class CallerTable:
    """A profile's pick tables turned round: each function's callers with
    the weight of the call in the caller's table, in table order (callers
    ascending).  ``get(f)`` is what a dict of lists of (caller, weight)
    would give (``way_up`` reads it once per function and reach set);
    kept in flat arrays (callee ``f``'s are ``caller[start[f]:start[f +
    1]]``): a dict of tuples was ~0.5 MB a profile, ~16 profiles used."""

    __slots__ = ("start", "caller", "weight")

    def __init__(self, tables):
        self.start, self.caller, self.weight = caller_arrays(tables)     # (compiled)

    def get(self, f: int, default=()):
        """``f``'s callers as [(caller, weight), ...]; ``default`` when none."""
        if not 0 <= f < len(self.start) - 1:
            return default
        lo, hi = self.start[f], self.start[f + 1]
        if lo == hi:
            return default
        return list(zip(self.caller[lo:hi], self.weight[lo:hi]))
