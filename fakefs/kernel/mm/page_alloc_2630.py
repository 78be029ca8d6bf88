"""The page allocator of Linux 2.6.30: ``__alloc_pages_internal()``.

:class:`PageAllocator` adds the allocation entry point to the zones and
free lists of :class:`~.buddy_2630.BuddyAllocator` (the zones themselves
are mmzone_2630.py, the gfp flags gfp_2630.py):

* ``__alloc_pages_internal()``'s descent as a resumable state machine:
  low watermark, kswapd wake-up and the min watermark, the no-watermark
  reserves of PF_MEMALLOC/TIF_MEMDIE tasks, synchronous direct reclaim,
  the zonelist OOM lock with the high-watermark retry, the OOM killer,
  and ``nopage``.  A caller that would sleep (``congestion_wait``,
  ``schedule_timeout``, waiting on writeback) is parked and resumed by
  :meth:`PageAllocator.tick`; ``alloc_pages`` then returns ``PENDING`` and
  the result is delivered to the caller's ``on_done`` callback.

The EQware instrumentation (``heap_alloc_count[6]``) sits where the 2009
patch put it: one increment at each of the five ``goto got_pg`` sites and
one after ``nopage:``.  Reclaim (``vmscan``) and the OOM killer are
separate objects plugged in as ``allocator.vmscan`` and ``allocator.oom``.
"""

from __future__ import annotations

from .buddy_2630 import BuddyAllocator
from .gfp_2630 import (GFP_ATOMIC, GFP_HIGHUSER_MOVABLE, GFP_KERNEL, GFP_NOIO, _GFP_COLD,
                       _GFP_COMP, _GFP_FS, _GFP_HARDWALL, _GFP_HIGH, _GFP_IO, _GFP_NOFAIL,
                       _GFP_NOMEMALLOC, _GFP_NORETRY, _GFP_NOWARN, _GFP_REPEAT, _GFP_WAIT,
                       _GFP_ZERO)
from .mmzone_2630 import (ALLOC_CPUSET, ALLOC_HARDER, ALLOC_HIGH, ALLOC_NO_WATERMARKS,
                          ALLOC_WMARK_HIGH, ALLOC_WMARK_LOW, ALLOC_WMARK_MIN, MAX_ORDER,
                          PAGE_ALLOC_COSTLY_ORDER, PAGE_SHIFT, Zone, zone_watermark_ok)

# What the users of the 2.6.30 allocator (vmscan, the OOM killer, the stress
# workloads) import from here, this module's own names and re-exported ones.
__all__ = [
    "GFP_ATOMIC", "GFP_HIGHUSER_MOVABLE", "GFP_KERNEL", "GFP_NOIO", "LVL_FAIL", "LVL_LOW",
    "LVL_MIN", "LVL_NO_WMARK", "LVL_OOM_HIGH", "LVL_RECLAIM", "MAX_ORDER", "PAGE_SHIFT",
    "PENDING", "PF_EXITING", "PF_KSWAPD", "PF_KTHREAD", "PF_MEMALLOC", "AllocRequest",
    "MmTask", "PageAllocator", "Zone", "_GFP_COLD", "_GFP_COMP", "_GFP_FS", "_GFP_IO",
    "_GFP_REPEAT", "_GFP_ZERO", "zone_watermark_ok",
]

# --- task flags the allocator looks at --------------------------------------
PF_EXITING = 0x00000004
PF_MEMALLOC = 0x00000800
PF_KSWAPD = 0x00040000
PF_KTHREAD = 0x00200000

# EQware counter indices (the article numbers them 1..6)
LVL_LOW, LVL_MIN, LVL_NO_WMARK, LVL_RECLAIM, LVL_OOM_HIGH, LVL_FAIL = range(6)


class _Pending:
    """Returned by ``alloc_pages`` when the caller has gone to sleep."""

    def __repr__(self):
        return "PENDING"

    def __bool__(self):
        return False


PENDING = _Pending()


class MmTask:
    """The parts of ``task_struct`` (and its mm) the allocator reads."""

    __slots__ = ("pid", "comm", "flags", "memdie", "rt", "in_interrupt", "cpu",
                 "oomkilladj", "uid", "rss", "pgtables", "stack", "start_jiffy",
                 "utime", "blocked", "alive", "exit_at", "parent", "nice", "on_exit",
                 "on_page")

    def __init__(self, pid: int, comm: str, cpu: int = 0, flags: int = 0,
                 in_interrupt: bool = False, rt: bool = False, uid: int = 0):
        self.pid = pid
        self.comm = comm[:15]
        self.flags = flags
        self.memdie = False          # TIF_MEMDIE
        self.rt = rt
        self.in_interrupt = in_interrupt
        self.cpu = cpu
        self.oomkilladj = 0
        self.uid = uid
        self.rss: list[int] = []     # anon pages (order-0 pfns)
        self.pgtables: list[int] = []
        self.stack = None            # (pfn, order) of the kernel stack
        self.start_jiffy = 0
        self.utime = 0               # jiffies of cpu time
        self.blocked = False         # sleeping in the allocator
        self.alive = True
        self.exit_at = None          # jiffy of the pending exit (SIGKILL)
        self.parent = None
        self.nice = 0
        self.on_exit = None
        self.on_page = None

    @property
    def total_vm(self) -> int:
        return len(self.rss) + len(self.pgtables)

    @property
    def has_mm(self) -> bool:
        return not (self.flags & PF_KTHREAD)

    def __repr__(self):
        return f"MmTask({self.comm}-{self.pid})"


class AllocRequest:
    """A caller asleep somewhere inside ``__alloc_pages_internal``."""

    __slots__ = ("gfp", "order", "task", "on_done", "label", "zonelist",
                 "alloc_flags", "pages_reclaimed", "reclaim_waits")

    def __init__(self, gfp, order, task, on_done, zonelist):
        self.gfp = gfp
        self.order = order
        self.task = task
        self.on_done = on_done
        self.zonelist = zonelist
        self.label = "restart"
        self.alloc_flags = 0
        self.pages_reclaimed = 0
        self.reclaim_waits = 0


# how long the allocator sleeps, in jiffies (filled from HZ)
class _Sleeps:
    def __init__(self, hz: int):
        self.congestion = max(1, hz // 50)     # congestion_wait(WRITE, HZ/50)
        self.reclaim = max(1, hz // 10)        # reclaim's congestion_wait(HZ/10)
        self.timeout1 = 1                      # schedule_timeout_uninterruptible(1)


class PageAllocator(BuddyAllocator):
    """The zones plus the allocation entry points: the slow path of
    ``__alloc_pages_internal()``, its sleepers and the EQware counters."""

    MAX_RECLAIM_WAITS = 4      # priority passes that wait for writeback
    P_RESCHED = 0.25           # chance to be preempted between reclaim and OOM

    def __init__(self, mem_bytes: int = 128 << 20, nr_cpus: int = 1, hz: int = 250,
                 reserved: list[tuple[int, int]] | None = None, printk=None,
                 rng=None):
        self.hz = hz
        self.sleeps = _Sleeps(hz)
        self.jiffies = 0
        self.printk = printk or (lambda text, level=6: None)
        self.rng = rng
        self.heap_alloc_count = [0] * 6
        self.vmscan = None           # set by vmscan_2630.attach()
        self.oom = None              # set by oom_kill_2630.attach()
        self._parked: dict[int, list[AllocRequest]] = {}
        self.nr_parked = 0
        self.nr_failures_warned = 0
        self._ratelimit = (-(10 ** 9), 0)   # printk_ratelimit: (window start, count)
        self.nr_alloc = 0
        super().__init__(mem_bytes, nr_cpus, reserved)

    # ------------------------------------------------------------- kswapd
    def wakeup_kswapd(self, zone: Zone, order: int) -> None:
        vm = self.vmscan
        if vm is None or (vm.kswapd_awake and order <= vm.kswapd_max_order):
            return              # already running for this order: nothing to do
        if not zone.populated:
            return
        if zone_watermark_ok(zone, order, zone.pages_low, 0, 0):
            return
        vm.wake_kswapd(order)

    # --------------------------------------------------------- OOM zone lock
    def try_set_zone_oom(self, zonelist: list[Zone]) -> bool:
        if any(z.oom_locked for z in zonelist):
            return False
        for z in zonelist:
            z.oom_locked = True
        return True

    def clear_zonelist_oom(self, zonelist: list[Zone]) -> None:
        for z in zonelist:
            z.oom_locked = False

    # ----------------------------------------------------------- allocation
    def alloc_pages(self, gfp: int, order: int, task: MmTask, on_done=None):
        """``__alloc_pages_internal()``.

        Returns the first pfn of the block, ``None`` for a failure, or
        ``PENDING`` when the caller sleeps; ``on_done(pfn_or_None)`` is
        then called when it wakes up with an answer.
        """
        self.nr_alloc += 1
        if order >= MAX_ORDER:
            return None
        zonelist = self.zonelist(gfp)
        if not zonelist:
            return None
        pfn = self.get_page_from_freelist(gfp | _GFP_HARDWALL, order, zonelist,
                                          ALLOC_WMARK_LOW | ALLOC_CPUSET, task.cpu)
        if pfn is not None:
            self.heap_alloc_count[LVL_LOW] += 1
            return pfn
        req = AllocRequest(gfp, order, task, on_done, zonelist)
        req.label = "after_first"
        return self._run(req)

    def _park(self, req: AllocRequest, delay: int, label: str):
        req.label = label
        req.task.blocked = True
        when = self.jiffies + max(1, delay)
        self._parked.setdefault(when, []).append(req)
        self.nr_parked += 1
        return PENDING

    def _done(self, req: AllocRequest, pfn, level: int):
        self.heap_alloc_count[level] += 1
        if level == LVL_FAIL:
            self._warn_alloc_failure(req)
        return pfn

    def _run(self, req: AllocRequest):
        """Run the slow path from ``req.label`` until an answer or a sleep."""
        gfp, order, task, zl = req.gfp, req.order, req.task, req.zonelist
        wait = gfp & _GFP_WAIT
        label = req.label
        while True:
            if label == "restart":
                pfn = self.get_page_from_freelist(gfp | _GFP_HARDWALL, order, zl,
                                                  ALLOC_WMARK_LOW | ALLOC_CPUSET, task.cpu)
                if pfn is not None:
                    return self._done(req, pfn, LVL_LOW)
                label = "after_first"
            if label == "after_first":
                for zone in zl:
                    self.wakeup_kswapd(zone, order)
                flags = ALLOC_WMARK_MIN
                if (task.rt and not task.in_interrupt) or not wait:
                    flags |= ALLOC_HARDER
                if gfp & _GFP_HIGH:
                    flags |= ALLOC_HIGH
                if wait:
                    flags |= ALLOC_CPUSET
                req.alloc_flags = flags
                pfn = self.get_page_from_freelist(gfp, order, zl, flags, task.cpu)
                if pfn is not None:
                    return self._done(req, pfn, LVL_MIN)
                label = "rebalance"
            if label == "rebalance":
                if (task.flags & PF_MEMALLOC or task.memdie) and not task.in_interrupt:
                    if not gfp & _GFP_NOMEMALLOC:
                        pfn = self.get_page_from_freelist(gfp, order, zl, ALLOC_NO_WATERMARKS,
                                                          task.cpu)
                        if pfn is not None:
                            return self._done(req, pfn, LVL_NO_WMARK)
                        if gfp & _GFP_NOFAIL:
                            return self._park(req, self.sleeps.congestion, "rebalance")
                    return self._done(req, None, LVL_FAIL)
                if not wait:
                    return self._done(req, None, LVL_FAIL)
                label = "reclaim"
            if label == "reclaim":
                progress, must_wait = self._direct_reclaim(req)
                if not progress and must_wait and req.reclaim_waits < self.MAX_RECLAIM_WAITS:
                    req.reclaim_waits += 1
                    return self._park(req, self.sleeps.reclaim, "reclaim")
                req.reclaim_waits = 0
                if order:
                    self.drain_all_pages()
                if progress:
                    pfn = self.get_page_from_freelist(gfp, order, zl, req.alloc_flags, task.cpu)
                    if pfn is not None:
                        return self._done(req, pfn, LVL_RECLAIM)
                elif gfp & _GFP_FS and not gfp & _GFP_NORETRY:
                    # cond_resched() after reclaim: on a busy board the task
                    # may lose the CPU here for a while
                    if self.rng is not None and self.rng.random() < self.P_RESCHED:
                        return self._park(req, 1, "oom")
                    label = "oom"
                    continue
                req.pages_reclaimed += progress
                retry = False
                if not gfp & _GFP_NORETRY:
                    if order <= PAGE_ALLOC_COSTLY_ORDER:
                        retry = True
                    elif gfp & _GFP_REPEAT and req.pages_reclaimed < (1 << order):
                        retry = True
                    if gfp & _GFP_NOFAIL:
                        retry = True
                if retry:
                    return self._park(req, self.sleeps.congestion, "rebalance")
                return self._done(req, None, LVL_FAIL)
            if label == "oom":
                if not self.try_set_zone_oom(zl):
                    return self._park(req, self.sleeps.timeout1, "restart")
                # only to catch a parallel OOM kill: the high watermark
                pfn = self.get_page_from_freelist(gfp | _GFP_HARDWALL, order, zl,
                                                  ALLOC_WMARK_HIGH | ALLOC_CPUSET, task.cpu)
                if pfn is not None:
                    self.clear_zonelist_oom(zl)
                    return self._done(req, pfn, LVL_OOM_HIGH)
                if order > PAGE_ALLOC_COSTLY_ORDER:
                    self.clear_zonelist_oom(zl)
                    return self._done(req, None, LVL_FAIL)
                if self.oom is not None:
                    self.oom.out_of_memory(zl, gfp, order, task)
                self.clear_zonelist_oom(zl)
                if not task.memdie:
                    return self._park(req, self.sleeps.timeout1, "restart")
                label = "restart"

    def _direct_reclaim(self, req: AllocRequest) -> tuple[int, bool]:
        if self.vmscan is None:
            return 0, False
        task = req.task
        saved = task.flags
        task.flags |= PF_MEMALLOC
        try:
            return self.vmscan.try_to_free_pages(req.zonelist, req.order, req.gfp, task)
        finally:
            task.flags = saved

    def _warn_alloc_failure(self, req: AllocRequest) -> None:
        if req.gfp & _GFP_NOWARN:
            return
        if not self.printk_ratelimit():
            return
        self.nr_failures_warned += 1
        self.printk("%s: page allocation failure. order:%d, mode:0x%x"
                    % (req.task.comm, req.order, req.gfp), 4)

    def printk_ratelimit(self) -> bool:
        """10 messages per 5 s window (printk_ratelimit_state of 2.6.30)."""
        start, n = self._ratelimit
        if self.jiffies - start >= 5 * self.hz:
            start, n = self.jiffies, 0
        if n >= 10:
            self._ratelimit = (start, n)
            return False
        self._ratelimit = (start, n + 1)
        return True

    # ---------------------------------------------------------------- time
    def tick(self) -> None:
        """Advance one jiffy and wake the sleepers that are due."""
        self.jiffies += 1
        due = self._parked.pop(self.jiffies, None)
        if not due:
            return
        for req in due:
            self.nr_parked -= 1
            req.task.blocked = False
            if not req.task.alive:
                continue
            res = self._run(req)
            if res is not PENDING and req.on_done is not None:
                req.on_done(res)

    def parked(self) -> list[AllocRequest]:
        return [r for lst in self._parked.values() for r in lst]
