"""What the simulated machine allocates at run time: the memory workload
behind /proc/allocinfo and the kmem events (``kernel.alloc_workload``).

Boot left the kernel holding what a running system holds
(:mod:`fakefs.kernel.mm.alloc_boot`, then the machine's steady state:
:mod:`.alloc_history`).  From then on, driven by the kernel's timer hooks,
the machine keeps allocating and freeing through the kernel's code paths
(:class:`~fakefs.kernel.mm.alloc_calls.AllocCalls`; what each operation
allocates and how long it keeps it: :mod:`.alloc_history`):
short commands fork and exit, the page cache fills through readahead and
``__filemap_get_folio``, packets come and go, netlink sockets bind and
close, path lookups take and drop names, files open, now and then
something walks a tree (a burst of dentries and readahead), ctagmod's
timer fires every 10 s, and the call sites boot picked keep churning (of
those, the ones some task of the machine gets to: ``keep_runtime_sites``).
The workload runs when what it does can be seen.  While a kmem tracepoint
is in use, the machine makes each operation as its own event, at its
instant, in a task that gets to its call site (:mod:`.alloc_arrivals`), so
its events take their place in the trace as they fire.  Else it owes the time until something looks at the allocators (the kernel's
``alloc_tag.settle`` and ``log.settle`` hooks: /proc/allocinfo, the
mem_profiling sysctl, a module load, a request for pages near the memory
limit, the kernel log, which may warn), and then simulates it in steps:
each count a Poisson draw at its rate, at instants of the step
(:mod:`.alloc_moments`), then what is due is freed.  Of a longer unseen stretch only
the last OWED_MAX_NS is simulated: the rest is time the machine's
allocators did nothing, as in a gap the machine skips.

The workload keeps its own clock (``now``), advanced by each step: time
the kernel skips is time the machine did nothing, so nothing due in it is
freed either.  Its draws come from the kernel's ``alloc_workload`` RNG,
the stream boot's replay drew from, so a given seed replays one history.
"""

from __future__ import annotations

import itertools
import math

from ..kernel.lib._mt import expovariate
from ..kernel.mm.alloc_calls import AllocCalls
from ..kernel.mm.alloc_sites import lognormal
from ..kernel.mm.page_alloc import GFP_ATOMIC, GFP_KERNEL
from . import alloc_history as ops
from .alloc_arrivals import OpKind
from .alloc_history import Lifetimes
from .alloc_moments import Moments

NS = 1_000_000_000
# short-lived churn of a busy machine, per second: packets in flight and
# their buffers, path lookups (getname() -> names_cache, freed at once)
SKB_RATE = 1500.0
GETNAME_RATE = 2500.0
OWED_MAX_NS = 2 * NS
OWED_STEP_NS = 20_000_000
CTAGMOD_PERIOD_NS = 10 * NS


class AllocWorkload:
    """``kernel.alloc_workload``: the machine's allocations at run time."""

    def __init__(self, kernel):
        self.kernel = kernel
        self.calls: AllocCalls = kernel.alloc_calls
        self.rng = self.calls.rng
        self.life = Lifetimes()              # the objects due to be freed
        self.now = 0
        self.next_ctagmod_tick = CTAGMOD_PERIOD_NS
        self.next_burst = 45 * NS
        self.steps = 0
        self.hot: list[tuple] = []           # (profile, rate, mean lifetime s): set_hot()
        self.hot_cum: list[float] = []       # their cumulative rates
        # the kernel's time and CPU the allocators' trace events get
        self.moments = Moments(kernel, self.calls.trace)
        self.owed = 0                        # kernel time stepped but not yet simulated
        self.fixed = self._fixed_ops()
        # the machine's events making the operations while traced
        # (``alloc_arrivals.Arrivals``: a machine sets it)
        self.arrivals = None
        kernel.alloc_tag.settle.hooks.append(self.settle)
        kernel.alloc_tag.settle.slices.append(self.settle_slice)
        kernel.log.settle.hooks.append(self.settle)
        kernel.log.settle.slices.append(self.settle_slice)

    def _fixed_ops(self) -> list[tuple]:
        """The scripted operations, (rate a second, call site key, making
        one), in the order ``_run`` draws them: short commands fork and
        exit, the page cache fills, trees of dentries, packets in flight and
        their buffers, netlink sockets, path lookups, open files."""
        calls, life, rng = self.calls, self.life, self.rng
        return [
            (2.0, "task", lambda: ops.short_process(calls, life, rng)),
            (3.3, "readahead", lambda: ops.readahead(calls, life, rng)),
            (25.0, "filemap", lambda: ops.filemap(calls, life, rng)),
            (0.6, "dentry", lambda: ops.dentries(calls, life, rng, 16,
                                                 lognormal(rng, 600, 1.0, 5, 7200))),
            (SKB_RATE, "skb", lambda: ops.skb(calls, life, rng)),
            (2.0, "sk", lambda: life.expire(expovariate(rng, 1 / 30.0), calls.nl_close,
                                            calls.nl_sock())),
            (GETNAME_RATE, "getname", lambda: life.expire(
                expovariate(rng, 1 / 0.02), calls.slab.kfree,
                calls.cache_alloc("getname", "names_cache"))),
            (20.0, "filp", lambda: life.expire(expovariate(rng, 1 / 5.0), calls.slab.kfree,
                                               calls.cache_alloc("filp", "filp"))),
        ]

    def op_kinds(self) -> list[OpKind]:
        """Every operation ``_run`` makes by rate, as the machine's arrivals
        make them (:mod:`.alloc_arrivals`): the churning call sites (an
        atomic one's made on top of whatever runs: site 0), then the
        scripted ones."""
        calls = self.calls
        call_site = calls.trace.call_site
        kinds = []
        hot_op = self._hot_op
        for p, rate, mean in self.hot:
            kinds.append(OpKind(rate, call_site(p.tag) if p.gfp == GFP_KERNEL else 0,
                                lambda p=p, mean=mean: hot_op(p, mean)))
        for rate, key, op in self.fixed:
            kinds.append(OpKind(rate, call_site(calls.site(key)), op))
        return kinds

    def keep_runtime_sites(self) -> None:
        """Of the call sites boot left churning (``calls.hot``), keep those
        the machine gets to (``Workload.site_reachable``): a site only boot
        code calls (an ``__init`` function, a driver's probe) stops
        allocating once the machine runs, and so does one whose function
        cannot be placed (``KmemTrace.call_site`` is 0).  A site only an
        interrupt gets to (a softirq's packet receive) allocates with
        GFP_ATOMIC, or stops if its allocator may sleep (vmalloc).
        Without a call graph, all of them."""
        wl = self.kernel.workload
        if wl is None:
            self.set_hot(self.calls.hot)
            return
        call_site = self.calls.trace.call_site
        hot = []
        for h in self.calls.hot:
            p = h[0]
            site = call_site(p.tag)
            if not site:
                continue
            if not wl.site_reachable(site, task_only=True):
                if p.kind in ("vmalloc", "kvmalloc") or not wl.site_reachable(site):
                    continue
                p.gfp = GFP_ATOMIC
            hot.append(h)
        self.set_hot(hot)

    def set_hot(self, hot: list[tuple]) -> None:
        """The call sites that churn: (profile, rate, mean lifetime s)."""
        self.hot = hot
        self.hot_cum = list(itertools.accumulate(rate for _p, rate, _life in hot))

    def _moment(self, w: int | None = None) -> None:
        """The next operation of a bulk step happens at workload time ``w``
        (an expiry), or, when None, at an instant of the step
        (:class:`.alloc_moments.Moments`)."""
        t = self.moments.draw(w)
        if t is not None:
            self.life.op_time = t

    # ------------------------------------------------------------------ time
    def step(self, t0: int, t1: int) -> None:
        """The kernel's time went on over [t0, t1) (its timer hook): with a
        kmem tracepoint in use, the machine made the step's operations
        (without a machine: simulate it now), else owe it."""
        if t1 <= t0:
            return
        if self.arrivals is not None and self.arrivals.end(t0, t1):
            self.steps += 1                  # (the machine made its operations)
            return
        # (with a machine, a step it did not run live is owed: a kmem event
        # enabled in the middle of it is traced from the next)
        if self.arrivals is None and self.calls.trace.traced():
            self.settle()
            self._run(t0, t1 - t0)
        else:
            self.owed += t1 - t0

    def settle(self) -> None:
        """Simulate the time owed (its last OWED_MAX_NS), untraced."""
        while self.settle_slice():
            pass

    def settle_slice(self) -> bool:
        """Simulate OWED_STEP_NS of the time owed (of its last OWED_MAX_NS),
        untraced: True while more is owed.  (``settle()`` in slices: the
        same operations, a catch-up lets requests in between them.)"""
        owed = min(self.owed, OWED_MAX_NS)
        span = min(owed, OWED_STEP_NS)
        if span > 0:
            self._run(None, span)
        self.owed = owed - span
        return self.owed > 0

    def _run(self, t0: int | None, span: int) -> None:
        """Simulate ``span`` ns from kernel time ``t0`` (None: owed time,
        nothing traced): new allocations by rate, then expirations."""
        dt = span / NS
        self.moments.begin(self.now, t0, span)
        t1 = self.now + span
        rng = self.rng
        calls = self.calls
        life = self.life
        self.steps += 1
        # generic call sites
        if self.hot:
            n = _poisson(rng, self.hot_cum[-1] * dt)
            if n:
                hot = self.hot
                picks = rng.choices(range(len(hot)), cum_weights=self.hot_cum, k=n)
                moment = self._moment
                hot_op = self._hot_op
                for i in picks:
                    p, _rate, mean = hot[i]
                    moment()
                    hot_op(p, mean)
        moment = self._moment
        for rate, _key, op in self.fixed:
            for _ in range(_poisson(rng, rate * dt)):
                moment()
                op()
        self.timed(t1, moment)
        self.now = t1
        for t, fn, obj in life.due(t1):
            moment(t)
            fn(obj)
        self.moments.end()
        life.op_time = t1

    def _hot_op(self, p, mean: float) -> None:
        """One allocation at the churning call site of profile ``p``, kept
        an exponential lifetime of mean ``mean`` seconds."""
        calls = self.calls
        self.life.expire(expovariate(self.rng, 1.0 / mean), calls.free, calls.alloc_profile(p))

    def timed(self, w: int, moment) -> None:
        """What is due by workload time ``w`` at its own times, each after
        ``moment()`` (it places it): something walks a tree; ctagmod's
        timer fires (and is set again ``CTAGMOD_PERIOD_NS`` after ``now``)."""
        if w >= self.next_burst:
            moment()
            self._burst(self.rng)
        if "ctagmod" in self.calls.modules and w >= self.next_ctagmod_tick:
            moment()
            self.next_ctagmod_tick = self.now + CTAGMOD_PERIOD_NS
            self.calls.ctagmod_work()

    def next_timed(self) -> int:
        """The workload time of its next timed event (a tree walk, ctagmod's timer)."""
        if "ctagmod" in self.calls.modules:
            return min(self.next_burst, self.next_ctagmod_tick)
        return self.next_burst

    def _burst(self, rng) -> None:
        """Something walks a tree (updatedb, a build, a backup)."""
        calls = self.calls
        self.next_burst = self.now + int(lognormal(rng, 90, 0.6, 20, 600) * NS)
        life = lognormal(rng, 400, 0.8, 30, 3600)
        for _ in range(int(lognormal(rng, 40, 0.8, 4, 250))):
            ops.dentries(calls, self.life, rng, 16, life * rng.random())
        for _ in range(int(lognormal(rng, 30, 0.8, 2, 200))):
            ops.readahead(calls, self.life, rng)

    def run_for(self, ns: int, step_ns: int = 20_000_000) -> None:
        """Drive the workload directly (tests, benchmarks)."""
        self.settle()
        while ns > 0:
            self._run(None, min(ns, step_ns))
            ns -= step_ns


def _poisson(rng, lam: float) -> int:
    if lam <= 0:
        return 0
    if lam > 30:
        return max(0, int(rng.gauss(lam, math.sqrt(lam)) + 0.5))
    limit = math.exp(-lam)
    k = 0
    p = rng.random()
    while p > limit:
        k += 1
        p *= rng.random()
    return k


def start(kernel) -> AllocWorkload | None:
    """The machine's allocations, running with the kernel's time from now
    on (a kernel with the allocators, CONFIG_MEM_ALLOC_PROFILING, booted
    on the machine: ``machine_init.alloc_steady_init`` made it)."""
    wl = kernel.alloc_workload
    if wl is None:
        return None
    wl.keep_runtime_sites()
    kernel.add_timer_hook(wl.step)
    return wl
