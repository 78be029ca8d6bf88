"""What drives the 2.6.30 allocator: the board's tasks and the stress workloads.

:class:`MemorySystem` owns the allocator, reclaim and the OOM killer, the
processes of a small embedded Linux board (init, a few daemons, kswapd0,
pdflush, ...) and the workload, advanced one jiffy at a time.

Background activity is always there and keeps an idle board's allocations
at the first level: kernel object churn (GFP_KERNEL), a few received
packets (GFP_ATOMIC in softirq), a short-lived shell every couple of
seconds (fork: order-1 stack, page tables, anonymous pages), syslog appends.

Stress scenarios (``SCENARIOS``) add, selectable at boot (``heap_stress=``)
or at run time:

``pagecache``  a big sequential file read: clean page cache fills memory,
               kswapd is woken and keeps up (level 2 starts to appear);
``writer``     ``dd`` to a file: dirty page cache, throttled writers,
               reclaim has to wait for writeback and allocate bios from its
               PF_MEMALLOC context (level 3) and direct reclaim (level 4);
``memhog``     an anonymous-memory hog on a swapless board: reclaim runs
               dry, the OOM killer kills the hog (restarted a second later);
               allocators that were in reclaim catch the freed memory above
               the high watermark (level 5);
``netstorm``   a receive storm, GFP_ATOMIC order 0 plus order-2 jumbo
               frames: fails (level 6) once memory is short or fragmented;
``stress``     all of the above at once.
"""

from __future__ import annotations

from .oom_kill_2630 import OOM_DISABLE, OomKiller
from .page_alloc_2630 import (GFP_ATOMIC, GFP_HIGHUSER_MOVABLE, GFP_KERNEL, PAGE_SHIFT,
                              PENDING, PF_EXITING, PF_KTHREAD, MmTask, PageAllocator,
                              _GFP_COLD, _GFP_COMP, _GFP_REPEAT, _GFP_ZERO)
from .vmscan_2630 import Vmscan

SCENARIOS = ("idle", "pagecache", "writer", "memhog", "netstorm", "stress")
# role -> allocation requests per second (netstorm: steady receive rate;
# ring refill bursts and jumbo frames come on top)
SCENARIO_PARTS: dict[str, dict[str, int]] = {
    "idle": {},
    "pagecache": {"pagecache": 5000},
    "writer": {"writer": 4000},
    "memhog": {"memhog": 3000},
    "netstorm": {"netstorm": 1200},
    "stress": {"pagecache": 1000, "writer": 1200, "memhog": 1500, "netstorm": 600},
}

GFP_PGTABLE = GFP_KERNEL | _GFP_REPEAT | _GFP_ZERO
GFP_PAGECACHE_READ = GFP_HIGHUSER_MOVABLE | _GFP_COLD
THREAD_ORDER = 1


class Rate:
    """Events per jiffy from a per-second rate, deterministic given the rng."""

    __slots__ = ("per_jiffy",)

    def __init__(self, per_second: float, hz: int):
        self.per_jiffy = per_second / hz

    def draw(self, rng) -> int:
        n = int(self.per_jiffy)
        if rng.random() < self.per_jiffy - n:
            n += 1
        return n


class MemorySystem:
    """The board: memory, tasks and workload, advanced by :meth:`jiffy`."""

    RING_SIZE = 256                # receive descriptors of the NIC
    RING_REFILL_CHANCE = 0.04      # per jiffy, under a receive storm

    def __init__(self, mem_bytes: int = 128 << 20, nr_cpus: int = 1, hz: int = 250,
                 rng=None, printk=None, pid_alloc=None):
        import random
        self.rng = rng or random.Random(1)
        self.hz = hz
        self.nr_cpus = max(1, nr_cpus)
        self.printk = printk or (lambda text, level=6: None)
        self._pid_alloc = pid_alloc
        self._next_pid = 2          # pid 1 is init, created by boot()
        # kernel image + early bootmem at 16 MiB (CONFIG_PHYSICAL_START)
        kstart = (16 << 20) >> PAGE_SHIFT
        ksize = (9 << 20) >> PAGE_SHIFT
        if kstart + ksize > (mem_bytes >> PAGE_SHIFT) - 512:
            kstart = (2 << 20) >> PAGE_SHIFT
            ksize = (5 << 20) >> PAGE_SHIFT
        self.kernel_reserved = (kstart, kstart + ksize)
        self.pa = PageAllocator(mem_bytes, self.nr_cpus, hz, [self.kernel_reserved],
                                self.printk, self.rng)
        self.tasks: dict[int, MmTask] = {}
        self.kswapd = self._task("kswapd0", kthread=True)
        self.pdflush = self._task("pdflush", kthread=True)
        self.events = [self._task("events/%d" % c, kthread=True, cpu=c)
                       for c in range(self.nr_cpus)]
        self.softirq = [MmTask(0, "swapper", cpu=c, in_interrupt=True, flags=PF_KTHREAD)
                        for c in range(self.nr_cpus)]
        self.vm = Vmscan(self.pa, self.kswapd, self.pdflush, hz=hz,
                         kswapd_pages_per_jiffy=max(8, 12000 // hz),
                         disk_pages_per_jiffy=max(1, 2560 // hz))
        self.oom = OomKiller(self.pa, self.live_tasks, hz, self.printk)
        self.oom.on_kill = self._on_kill
        self._frees: dict[int, list[tuple[int, int, int]]] = {}
        self._exits: dict[int, list[MmTask]] = {}
        self._wakeups: dict[int, list[MmTask]] = {}
        self.scenario = "idle"
        self.parts: dict[str, Rate] = {}
        self.procs: dict[str, MmTask] = {}        # scenario processes by role
        self._respawn: dict[str, int] = {}
        self.packets_dropped = 0
        self.jiffies_run = 0
        r = lambda per_s: Rate(per_s, hz)  # noqa: E731
        self.rate = {
            "kmalloc": r(40), "kmalloc1": r(2), "rx": r(20), "spawn": r(0.5),
            "syslog": r(0.2),
        }
        self.init = None
        self.kernel_slab: list[int] = []      # boot-time objects that stay

    # ------------------------------------------------------------------ tasks
    def _task(self, comm: str, kthread: bool = False, cpu: int = 0, parent=None,
              pid: int | None = None) -> MmTask:
        if pid is not None:
            pass
        elif self._pid_alloc is not None:
            pid = self._pid_alloc(comm)
        else:
            pid = self._next_pid
            self._next_pid += 1
        t = MmTask(pid, comm, cpu=cpu % self.nr_cpus, flags=PF_KTHREAD if kthread else 0)
        t.start_jiffy = self.pa.jiffies
        t.parent = parent
        if not kthread:
            t.on_page = lambda pfn, t=t: self._add_anon(t, pfn) if pfn is not None else None
        self.tasks[pid] = t
        return t

    def live_tasks(self) -> list[MmTask]:
        return [t for t in self.tasks.values() if t.alive]

    def fork(self, comm: str, parent=None, cpu: int | None = None,
             pid: int | None = None) -> MmTask | None:
        """A new process: kernel stack (order 1), pgd and a first page table."""
        cpu = self.rng.randrange(self.nr_cpus) if cpu is None else cpu
        t = self._task(comm, cpu=cpu, parent=parent or self.init, pid=pid)
        actor = parent or self.init or t
        stack = self._alloc_now(actor, GFP_KERNEL, THREAD_ORDER)
        if stack is None:
            self._reap(t)
            return None
        t.stack = (stack, THREAD_ORDER)
        for _ in range(2):
            pfn = self._alloc_now(actor, GFP_PGTABLE, 0)
            if pfn is not None:
                t.pgtables.append(pfn)
        return t

    def _alloc_now(self, task, gfp, order):
        """An allocation whose caller does not care to sleep in the model:
        a parked request is answered later and its page freed on arrival."""
        res = self.pa.alloc_pages(gfp, order, task, lambda pfn: self._stray(pfn, order, task))
        return None if res is PENDING else res

    def _stray(self, pfn, order, task):
        if pfn is not None:
            self.free_later(pfn, order, 1, task.cpu)

    def exit_task(self, t: MmTask) -> None:
        """``do_exit``: drop the mm (all anonymous pages and page tables)
        and, once the task is reaped, its kernel stack."""
        if not t.alive:
            return
        t.flags |= PF_EXITING
        pa = self.pa
        self.vm.nr_anon -= len(t.rss)
        pa.free_page_list(t.rss, t.cpu)
        t.rss = []
        pa.free_page_list(t.pgtables, t.cpu)
        t.pgtables = []
        if t.stack is not None:
            pa.free_pages(t.stack[0], t.stack[1], t.cpu)
            t.stack = None
        t.memdie = False
        self._reap(t)
        if t.on_exit is not None:
            t.on_exit(t)

    def _reap(self, t: MmTask) -> None:
        t.alive = False
        self.tasks.pop(t.pid, None)
        for role, p in list(self.procs.items()):
            if p is t:
                del self.procs[role]

    def _on_kill(self, victim: MmTask) -> None:
        victim.exit_at = max(victim.exit_at, self.pa.jiffies + 1)
        self._exits.setdefault(victim.exit_at, []).append(victim)

    # --------------------------------------------------------------- memory
    def free_later(self, pfn: int, order: int, delay: int, cpu: int) -> None:
        self._frees.setdefault(self.pa.jiffies + max(1, delay), []).append((pfn, order, cpu))

    def fault_anon(self, t: MmTask, n: int) -> int:
        """``n`` anonymous page faults by ``t``; returns pages obtained.
        Stops early when the task has to sleep in the allocator."""
        got = 0
        for _ in range(n):
            if t.blocked or not t.alive:
                break
            res = self.pa.alloc_pages(GFP_HIGHUSER_MOVABLE, 0, t, t.on_page)
            if res is PENDING:
                break
            if res is None:
                continue
            self._add_anon(t, res)
            got += 1
        return got

    def _add_anon(self, t: MmTask, pfn: int) -> None:
        if not t.alive:
            self.pa.free_pages(pfn, 0, t.cpu)
            return
        t.rss.append(pfn)
        self.vm.nr_anon += 1
        if len(t.rss) % 512 == 0:      # a new page table every 2 MB
            pt = self._alloc_now(t, GFP_PGTABLE, 0)
            if pt is not None:
                t.pgtables.append(pt)

    def _make_process(self, comm: str, rss: int, oomkilladj: int = 0,
                      pid: int | None = None) -> MmTask | None:
        t = self.fork(comm, pid=pid)
        if t is None:
            return None
        t.oomkilladj = oomkilladj
        self.fault_anon(t, rss)
        return t

    def page_cache(self, task: MmTask, n: int, dirty: bool, gfp: int) -> int:
        got = 0
        vm = self.vm

        def arrived(pfn):
            if pfn is not None:
                vm.add_file_page(pfn, dirty)
        for _ in range(n):
            if task.blocked or not task.alive:
                break
            res = self.pa.alloc_pages(gfp, 0, task, arrived)
            if res is PENDING:
                break
            if res is not None:
                vm.add_file_page(res, dirty)
                got += 1
        return got

    def kmalloc_pages(self, task: MmTask, n: int, order: int, gfp: int,
                      life_min: int, life_max: int) -> int:
        """Slab refills: pages held for a while, then given back."""
        rng = self.rng
        got = 0
        for _ in range(n):
            if task.blocked:
                break
            life = rng.randint(life_min, life_max)
            res = self.pa.alloc_pages(gfp, order, task,
                                      lambda pfn, life=life, cpu=task.cpu:
                                      pfn is not None and self.free_later(pfn, order, life, cpu))
            if res is PENDING:
                break
            if res is None:
                if task.in_interrupt:
                    self.packets_dropped += 1
                continue
            self.free_later(res, order, life, task.cpu)
            got += 1
        return got

    # ----------------------------------------------------------------- boot
    def boot(self) -> None:
        """What a boot leaves behind: kernel slab, the root filesystem's
        cached binaries, a handful of daemons.  These allocations are what
        the first read of /proc/allocinfo shows."""
        ev = self.events[0]
        self.kmalloc_pages(ev, 4000, 0, GFP_KERNEL, 1, 2)        # initramfs, probing
        self._run_frees(force=True)
        for _ in range(1200):                                     # unreclaimable slab
            pfn = self.pa.alloc_pages(GFP_KERNEL, 0, ev)
            if pfn is None or pfn is PENDING:
                break
            self.kernel_slab.append(pfn)
        for _ in range(500):
            pfn = self.pa.alloc_pages(GFP_KERNEL, 0, ev)
            if pfn is None or pfn is PENDING:
                break
            self.vm.add_slab_reclaimable(pfn)
        self.init = self._make_process("init", 120, OOM_DISABLE, pid=1)
        self.oom.init_task = self.init
        self.page_cache(ev, 2500, False, GFP_PAGECACHE_READ)      # binaries, libraries
        for comm, rss in (("syslogd", 90), ("klogd", 60), ("udevd", 150),
                          ("dropbear", 110), ("getty", 70), ("crond", 80),
                          ("appd", 900)):
            self._make_process(comm, rss)

    def owned_pages(self):
        """(pfn, order) of every allocated page the model tracks: with the
        free blocks they must cover all of RAM exactly once."""
        yield from ((pfn, 0) for pfn in self.kernel_slab)
        for t in self.tasks.values():
            yield from ((pfn, 0) for pfn in t.rss)
            yield from ((pfn, 0) for pfn in t.pgtables)
            if t.stack is not None:
                yield t.stack
        for lst in self._frees.values():
            for pfn, order, _cpu in lst:
                yield pfn, order
        yield from self.vm.owned_pages()

    # ------------------------------------------------------------- scenario
    def set_scenario(self, name: str) -> None:
        if name not in SCENARIO_PARTS:
            raise ValueError(name)
        self.scenario = name
        new = SCENARIO_PARTS[name]
        for role in list(self.procs):
            if role not in new:
                p = self.procs.pop(role)
                p.on_exit = None
                if p.blocked:            # finishes its allocation, then exits
                    p.exit_at = self.pa.jiffies + 1
                    self._exits.setdefault(p.exit_at, []).append(p)
                else:
                    self.exit_task(p)
        self._respawn = {role: self.pa.jiffies for role in new if role in ("pagecache", "writer", "memhog")}
        self.parts = {role: Rate(per_s, self.hz) for role, per_s in new.items()}

    def _spawn_role(self, role: str) -> None:
        comm = {"pagecache": "cat", "writer": "dd", "memhog": "memhog"}[role]
        t = self._make_process(comm, 40)
        if t is None:
            self._respawn[role] = self.pa.jiffies + self.hz
            return
        self.procs[role] = t

        def died(task, role=role):
            if role in self.parts:
                self._respawn[role] = self.pa.jiffies + self.hz
        t.on_exit = died

    # ------------------------------------------------------------------ run
    def _run_frees(self, force: bool = False) -> None:
        pa = self.pa
        if force:
            keys = list(self._frees)
        else:
            keys = [pa.jiffies] if pa.jiffies in self._frees else []
        for k in keys:
            for pfn, order, cpu in self._frees.pop(k):
                pa.free_pages(pfn, order, cpu)

    def _run_exits(self) -> None:
        due = self._exits.pop(self.pa.jiffies, None)
        if not due:
            return
        for t in due:
            if not t.alive:
                continue
            if t.blocked:               # still in the allocator: exit afterwards
                t.exit_at = self.pa.jiffies + 1
                self._exits.setdefault(t.exit_at, []).append(t)
                continue
            self.exit_task(t)

    def jiffy(self) -> None:
        pa = self.pa
        rng = self.rng
        rate = self.rate
        pa.tick()
        due = self._wakeups.pop(pa.jiffies, None)
        if due:
            for p in due:
                p.blocked = False
        self.jiffies_run += 1
        self._run_frees()
        self._run_exits()
        cpu = pa.jiffies % self.nr_cpus
        # --- background ----------------------------------------------------
        ev = self.events[cpu]
        n = rate["kmalloc"].draw(rng)
        if n:
            self.kmalloc_pages(ev, n, 0, GFP_KERNEL, self.hz // 20, 2 * self.hz)
        n = rate["kmalloc1"].draw(rng)
        if n:
            self.kmalloc_pages(ev, n, 1, GFP_KERNEL, self.hz // 20, 2 * self.hz)
        n = rate["rx"].draw(rng)
        if n:
            self.kmalloc_pages(self.softirq[cpu], n, 0, GFP_ATOMIC, 1, 3)
        if rate["spawn"].draw(rng):
            t = self.fork("sh")
            if t is not None:
                self.fault_anon(t, rng.randint(20, 60))
                self.page_cache(t, 2, False, GFP_PAGECACHE_READ)
                t.exit_at = pa.jiffies + rng.randint(self.hz // 10, self.hz // 4)
                self._exits.setdefault(t.exit_at, []).append(t)
        if rate["syslog"].draw(rng) and self.init is not None:
            self.page_cache(self.events[0], 1, True, GFP_HIGHUSER_MOVABLE)
        # --- stress ----------------------------------------------------------
        if self.parts:
            self._run_stress(rng, cpu)
        self.vm.tick()

    def _run_stress(self, rng, cpu) -> None:
        pa = self.pa
        for role, when in list(self._respawn.items()):
            if role in self.parts and role not in self.procs and pa.jiffies >= when:
                del self._respawn[role]
                self._spawn_role(role)
        parts = self.parts
        p = self.procs.get("pagecache")
        if p is not None and not p.blocked and not p.memdie:
            got = self.page_cache(p, parts["pagecache"].draw(rng), False, GFP_PAGECACHE_READ)
            p.utime += 1
            if got and rng.random() < got / 512:
                self._slab_grow(p)
        p = self.procs.get("writer")
        if p is not None and not p.blocked and not p.memdie:
            self._run_writer(p, parts["writer"], rng)
        p = self.procs.get("memhog")
        if p is not None and not p.blocked and not p.memdie:
            self.fault_anon(p, parts["memhog"].draw(rng))
            p.utime += 1
        net = parts.get("netstorm")
        if net is not None:
            sirq = self.softirq[cpu]
            n = net.draw(rng)
            if rng.random() < self.RING_REFILL_CHANCE:      # NAPI ring refill
                n += rng.randint(self.RING_SIZE // 4, self.RING_SIZE // 2)
            self.kmalloc_pages(sirq, n, 0, GFP_ATOMIC, 1, self.hz // 10)
            jumbo = n // 10 + (1 if rng.random() < (n % 10) / 10 else 0)
            self.kmalloc_pages(sirq, jumbo, 2, GFP_ATOMIC | _GFP_COMP, 1, self.hz // 10)

    def _slab_grow(self, task: MmTask) -> None:
        res = self.pa.alloc_pages(GFP_KERNEL, 0, task,
                                  lambda pfn: pfn is not None and self.vm.add_slab_reclaimable(pfn))
        if res is not None and res is not PENDING:
            self.vm.add_slab_reclaimable(res)

    def _run_writer(self, p: MmTask, rate: Rate, rng) -> None:
        """``dd``: dirty pages, and ``balance_dirty_pages`` throttling: over
        the dirty limit the writer starts writeback itself and then waits."""
        vm = self.vm
        _, limit = vm.dirty_limits()
        if vm.nr_dirty + vm.nr_writeback > limit:
            chunk = []
            for zone in self.pa.managed_zones:
                chunk += vm.take_dirty(zone, 48 - len(chunk))
                if len(chunk) >= 48:
                    break
            if chunk and not vm.congested():
                vm.start_writeback(chunk, p, reclaim=False)
            elif chunk:
                vm._in_flight(chunk)
                vm._redirty(chunk)
            if not p.blocked:          # congestion_wait(WRITE, HZ/10)
                p.blocked = True
                self._wakeups.setdefault(self.pa.jiffies + max(1, self.hz // 10), []).append(p)
            return
        self.page_cache(p, rate.draw(rng), True, GFP_HIGHUSER_MOVABLE)
        p.utime += 1

    def run_jiffies(self, n: int) -> None:
        for _ in range(n):
            self.jiffy()

    def skip_jiffies(self, n: int) -> None:
        """Time nobody watched: shift every timer, count the background
        allocations that would have come and gone at the first level."""
        if n <= 0:
            return
        pa = self.pa
        pa._parked = {k + n: v for k, v in pa._parked.items()}
        self._frees = {k + n: v for k, v in self._frees.items()}
        self._exits = {k + n: v for k, v in self._exits.items()}
        self._wakeups = {k + n: v for k, v in self._wakeups.items()}
        self._respawn = {k: v + n for k, v in self._respawn.items()}
        pa.jiffies += n
        per_j = sum(self.rate[k].per_jiffy for k in ("kmalloc", "kmalloc1", "rx"))
        pa.heap_alloc_count[0] += int(per_j * n)
