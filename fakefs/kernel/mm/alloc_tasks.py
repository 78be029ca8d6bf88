"""The memory of tasks: what ``copy_process()`` and ``dup_mm()`` allocate
(kernel/fork.c), what an ``execve()`` trades (fs/exec.c) and what
``do_exit()`` gives back (kernel/exit.c), for the call sites of
:mod:`.alloc_calls`.

Two kinds of processes have memory here:

* the workload's own: boot's kernel threads and services, and the short
  commands the machine keeps running (``new_process`` / ``exit_process``,
  made and expired by the workload at its rates);
* the real machine's processes the simulated one follows (``sim/host.py``):
  a followed process that forks gets a child with a copy of an mm, an exec
  frees that mm and maps the new program (its path lookups: ``getname()``
  and ``putname()`` of the program, the loader and its libraries), and the
  exit frees everything — each on the CPU and at the instant the process
  does it, so the allocators' trace events show them in the process's
  context, with the call sites of those paths (``FREE_SITES``).

The frees at exit happen at once: a VMA goes back to its cache from
``vm_area_free()`` (``__vm_area_free()`` inlined), as in a kernel built
without CONFIG_PER_VMA_LOCK; with it, an RCU callback frees the VMA a grace
period later (the call graph has both ways).
"""

from __future__ import annotations

from .alloc_sites import lognormal
from .slub import Obj
from .vmalloc import VmArea

HOST_KEPT = 4096            # followed processes with memory (their exits are reported)
# the path lookups of an exec: the program, the loader, its cache and the
# libraries of a typical dynamically linked tool
EXEC_LOOKUPS = 12
LOOKUP_NS = 3000            # between two of them


class FreeSite:
    """Where a free is called from, when the freeing code is known: a
    function and a line of it (``KmemTrace.call_site`` places it as it
    places an allocation's tag)."""

    __slots__ = ("function", "lineno")

    def __init__(self, function: str, lineno: int):
        self.function = function
        self.lineno = lineno


# kmem cache -> the function that frees its objects when a process ends,
# with the line of its kmem_cache_free() in v6.12 (or of the function
# inlined there that makes it)
FREE_SITES = {
    "vm_area_struct": FreeSite("vm_area_free", 523),
    "vma_lock": FreeSite("vm_area_free", 466),
    "anon_vma": FreeSite("__put_anon_vma", 138),
    "anon_vma_chain": FreeSite("unlink_anon_vmas", 148),
    "task_struct": FreeSite("free_task", 193),
    "pid": FreeSite("put_pid", 121),
    "cred_jar": FreeSite("put_cred_rcu", 89),
    "files_cache": FreeSite("put_files_struct", 445),
    "fs_cache": FreeSite("free_fs_struct", 93),
    "sighand_cache": FreeSite("__cleanup_sighand", 1868),
    "signal_cache": FreeSite("__put_task_struct", 983),
    "mm_struct": FreeSite("__mmdrop", 953),
}
PUTNAME = FreeSite("putname", 285)


class Process:
    """The memory of one task (and its mm, if it has one): ``objs``, of
    which ``objs[mm_at:]`` are the mm's (what an exec replaces)."""

    __slots__ = ("objs", "mm_at")

    def __init__(self):
        self.objs: list = []
        self.mm_at = 0


class TaskMemory:
    """``alloc_calls.tasks``: every process's memory."""

    __slots__ = ("calls", "host", "cached_stacks", "rng")

    def __init__(self, calls, rng):
        self.calls = calls
        self.host: dict[int, Process] = {}        # followed real processes, by pid
        self.cached_stacks: list = []
        self.rng = rng                            # the host processes' draws only

    # --- the workload's processes -------------------------------------------
    def new_process(self, kthread: bool = False, rss: int = 0, nvma: int = 0,
                    threads: int = 1) -> Process:
        """``copy_process`` + ``dup_mm`` (+ the first page faults)."""
        calls = self.calls
        proc = Process()
        objs = proc.objs
        for _t in range(threads):
            objs.append(calls.cache_alloc("task", "task_struct", node=0))
            objs.append(self._stack())
            objs.append(calls.cache_alloc("pid", "pid"))
            objs.append(calls.cache_alloc("cred", "cred_jar"))
        if kthread:
            objs.append(calls.slab.kmalloc(calls.site("kthread"), 96))
        else:
            objs.append(calls.cache_alloc("files", "files_cache"))
            objs.append(calls.cache_alloc("fs", "fs_cache"))
            objs.append(calls.cache_alloc("sighand", "sighand_cache"))
            objs.append(calls.cache_alloc("signal", "signal_cache"))
            self._new_mm(proc, rss, nvma)
        return proc

    def _new_mm(self, proc: Process, rss: int, nvma: int, fresh: bool = False) -> None:
        """An mm with ``nvma`` VMAs and ``rss`` anonymous pages: a fork's
        copy (``dup_mm``, ``vm_area_dup``), or ``fresh``, an exec's
        (``mm_alloc``, ``vm_area_alloc``)."""
        calls = self.calls
        s = calls.slab
        proc.mm_at = len(proc.objs)
        objs = proc.objs
        if fresh:
            objs.append(s.kmem_cache_alloc(self._exec_tag("mm_alloc"), calls.caches["mm_struct"]))
        else:
            objs.append(calls.cache_alloc("dup_mm", "mm_struct"))
        objs.append(calls.pcpu.alloc(calls.site("mm_cid"), 16))
        objs.append(calls.pa.alloc_pages(calls.site("pgd"), 1))
        vma = calls.caches["vm_area_struct"]
        lock = calls.caches["vma_lock"]
        t_vma = self._exec_tag("vm_area_alloc") if fresh else calls.site("vma_dup")
        t_lock = calls.site("vma_lock")
        for _ in range(nvma):
            objs.append(s.kmem_cache_alloc(t_vma, vma))
            objs.append(s.kmem_cache_alloc(t_lock, lock))
        for _ in range(max(1, nvma // 3)):
            objs.append(calls.cache_alloc("anon_vma", "anon_vma"))
            objs.append(calls.cache_alloc("avc", "anon_vma_chain"))
        ptes = 4 + rss // 512 + nvma // 8
        objs.append(calls.pages("pte", ptes))
        if rss:
            objs.append(calls.pages("anon", rss))

    def _exec_tag(self, function: str):
        """The tag of an exec's allocation in kernel/fork.c.  Not one of the
        workload's SITES: those are scripted only, and these call sites
        also keep the background activity boot gave them."""
        return self.calls.find_tag("kernel/fork.c", function)

    def _stack(self):
        if self.cached_stacks:
            return self.cached_stacks.pop()
        return self.calls.vm.vmalloc(self.calls.site("stack"), 16384)

    def exit_process(self, proc: Process, sites: bool = False) -> None:
        """``do_exit`` + ``free_task``: stacks go back to the per-CPU cache.
        ``sites``: the frees are traced with the call sites of the exit path."""
        self._free(proc.objs, sites)
        proc.objs = []

    def _free(self, objs: list, sites: bool) -> None:
        calls = self.calls
        trace = calls.trace
        cache_max = 2 * calls.nr_cpus
        for o in objs:
            if isinstance(o, VmArea) and len(self.cached_stacks) < cache_max and o.nr_pages == 4:
                self.cached_stacks.append(o)
                continue
            if sites:
                trace.free_site = FREE_SITES.get(o.slab.cache.name) if isinstance(o, Obj) else None
            calls.free(o)
        trace.free_site = None

    # --- the real machine's processes ---------------------------------------
    def host_fork(self, pid: int, cpu: int, t: int, thread: bool = False) -> None:
        """A followed process forked child ``pid`` on ``cpu`` at ``t``: a
        process with a copy of its parent's mm, or (``thread``) a task
        sharing all of that, with its own task_struct, stack and pid."""
        calls = self.calls
        rng = self.rng
        with _At(calls.trace, cpu, t):
            if thread:
                proc = Process()
                proc.objs += [calls.cache_alloc("task", "task_struct", node=0), self._stack(),
                              calls.cache_alloc("pid", "pid")]
                proc.mm_at = len(proc.objs)
            else:
                proc = self.new_process(rss=int(lognormal(rng, 60, 0.8, 8, 4000)),
                                        nvma=int(lognormal(rng, 28, 0.3, 10, 90)))
            self._keep(pid, proc)

    def host_exec(self, pid: int, cpu: int, t: int) -> None:
        """``pid`` calls ``execve()`` on ``cpu`` at ``t``: the program is
        looked up, the old mm goes and the new one is mapped.  (Then, as it
        starts, the loader looks up its cache and the libraries: EXEC_LOOKUPS
        - 1 more ``lookup()``s, LOOKUP_NS apart, which its caller makes when
        the machine gets to them.)"""
        calls = self.calls
        rng = self.rng
        trace = calls.trace
        self.lookup(cpu, t)
        proc = self.host.get(pid)
        with _At(trace, cpu, t):
            if proc is None:                      # its fork was not seen: its mm only
                proc = Process()
                self._keep(pid, proc)
            else:
                old, proc.objs = proc.objs[proc.mm_at:], proc.objs[:proc.mm_at]
                self._free(old, True)
            self._new_mm(proc, int(lognormal(rng, 60, 0.8, 8, 4000)),
                         int(lognormal(rng, 28, 0.3, 10, 90)), fresh=True)

    def lookup(self, cpu: int, t: int) -> None:
        """A path looked up: ``getname()``, then ``putname()``."""
        calls = self.calls
        trace = calls.trace
        with _At(trace, cpu, t):
            name = calls.cache_alloc("getname", "names_cache")
            trace.free_site = PUTNAME
            calls.free(name)
            trace.free_site = None

    def host_exit(self, pid: int, cpu: int | None, t: int) -> None:
        """``pid`` exits on ``cpu`` at ``t`` (None: while nothing can see
        the machine, untraced)."""
        proc = self.host.pop(pid, None)
        if proc is None:
            return
        with _At(self.calls.trace, cpu, t):
            self.exit_process(proc, sites=True)

    def _keep(self, pid: int, proc: Process) -> None:
        old = self.host.pop(pid, None)
        if old is not None:                    # its exit was never reported
            self.exit_process(old)
        self.host[pid] = proc
        if len(self.host) > HOST_KEPT:
            self.exit_process(self.host.pop(next(iter(self.host))))


class _At:
    """The allocators' operations inside happen on ``cpu`` at ``t`` (None:
    untraced); the workload's own moment is put back after."""

    __slots__ = ("trace", "when", "saved")

    def __init__(self, trace, cpu, t):
        self.trace = trace
        self.when = (cpu, t) if cpu is not None else None
        self.saved = None

    def __enter__(self):
        self.saved = self.trace.when
        self.trace.when = self.when

    def __exit__(self, *exc):
        self.trace.when = self.saved
