"""The snapshot buffer (CONFIG_TRACER_SNAPSHOT, kernel/trace/trace.c).

Every trace array has a second ring buffer, ``tr.max_buffer``, kept at the
minimum size until the snapshot is allocated (``tracing_alloc_snapshot_instance()``:
each CPU as large as the main buffer's, pages from the machine's memory,
ENOMEM when they do not fit).  Taking a snapshot (``update_max_tr()``)
swaps the two buffers' contents; the array's recording state (tracing_on,
readers that paused it) stays with the array, as the kernel's swap makes
the max buffer inherit it.  Here the per-CPU buffers change places, so an
entry reserved before a swap still lands where it was reserved (the
kernel's commit to the ``buffer`` it reserved in).

The ``snapshot`` file (``snapshot_fops``) of every array and of each
``per_cpu/cpuN``: reading shows the snapshot buffer like ``trace``, or, while
it is empty, the help text of ``print_snapshot_help()``; writing ``0`` frees
it (all-CPU file only), ``1`` allocates it if needed and swaps (one CPU in
a per-CPU file, when CONFIG_TRACER_SNAPSHOT_PER_CPU_SWAP selects
RING_BUFFER_ALLOW_SWAP), any other number clears it.  O_TRUNC means nothing
to it: ``echo > snapshot`` writes a newline, which is not a number (EINVAL).

A latency tracer (``use_max_tr``) owns the snapshot buffer while current:
its max trace is there; writing or reading ``snapshot`` is EBUSY then, and
a snapshot trigger writes two lines saying so instead.

Triggers and function probes *arm* the snapshot (``tracing_arm_snapshot()``:
allocate it and count the users, ``tr.snapshot_arms``); a trigger firing
on an array whose snapshot is not allocated writes two lines into the
buffer and switches tracing off (``tracing_snapshot_instance_cond()``).
"""

from __future__ import annotations

import errno

from ..fs.pseudo import KernelError
from . import trace_entries as te
from .trace_iter import TraceIter, TraceOps
from .trace_parser import user_ulong
from .trace_ref import ArrayFileOps

UINT_MAX = (1 << 32) - 1

SNAPSHOT_MAIN_HELP = (
    "# echo 0 > snapshot : Clears and frees snapshot buffer\n"
    "# echo 1 > snapshot : Allocates snapshot buffer, if not already allocated.\n"
    "#                      Takes a snapshot of the main buffer.\n"
    "# echo 2 > snapshot : Clears snapshot buffer (but does not allocate or free)\n"
    "#                      (Doesn't have to be '2' works with any number that\n"
    "#                       is not a '0' or '1')\n")
SNAPSHOT_PERCPU_ZERO = "# echo 0 > snapshot : Invalid for per_cpu snapshot file.\n"
SNAPSHOT_PERCPU_SWAP = (
    "# echo 1 > snapshot : Allocates snapshot buffer, if not already allocated.\n"
    "#                      Takes a snapshot of the main buffer for this cpu.\n")
SNAPSHOT_PERCPU_NOSWAP = (
    "# echo 1 > snapshot : Not supported with this kernel.\n"
    "#                     Must use main snapshot file to allocate.\n")
SNAPSHOT_PERCPU_CLEAR = (
    "# echo 2 > snapshot : Clears this cpu's snapshot buffer (but does not allocate)\n"
    "#                      (Doesn't have to be '2' works with any number that\n"
    "#                       is not a '0' or '1')\n")


def allow_swap(config) -> bool:
    """RING_BUFFER_ALLOW_SWAP: selected by the per-CPU snapshot swap option
    or by the irqs-off and preempt-off tracers."""
    return (config.enabled("TRACER_SNAPSHOT_PER_CPU_SWAP") or config.enabled("IRQSOFF_TRACER")
            or config.enabled("PREEMPT_TRACER"))


def snapshot_help(tr, cpu) -> str:
    """``print_snapshot_help()``"""
    if tr.allocated_snapshot:
        out = "#\n# * Snapshot is allocated *\n#\n"
    else:
        out = "#\n# * Snapshot is freed *\n#\n"
    out += "# Snapshot commands:\n"
    if cpu is None:
        return out + SNAPSHOT_MAIN_HELP
    swap = SNAPSHOT_PERCPU_SWAP if allow_swap(tr.kernel.config) else SNAPSHOT_PERCPU_NOSWAP
    return out + SNAPSHOT_PERCPU_ZERO + swap + SNAPSHOT_PERCPU_CLEAR


# --- allocation -----------------------------------------------------------------

def duplicate_size(tr, cpu=None) -> int:
    """``resize_buffer_duplicate_size(&max_buffer, &array_buffer, cpu)``:
    each CPU of the snapshot buffer as large as the size noted for the main
    one's, CPU after CPU; 0 or an -errno (the CPUs done so far stay done)."""
    mem = tr.tracing.buffer_memory()
    main, snap = tr.buffer, tr.max_buffer
    for c in (range(len(main.cpus)) if cpu is None else (cpu,)):
        err = snap.resize(main.noted[c], c, mem)
        if err:
            return err
    return 0


def alloc_snapshot(tr) -> None:
    """``tracing_alloc_snapshot_instance()``"""
    if not tr.allocated_snapshot:
        # the main buffer's sub-buffer size first (buffer_subbuf_size_kb)
        err = tr.max_buffer.set_subbuf_order(tr.buffer.subbuf_order, tr.tracing.buffer_memory())
        if not err:
            err = duplicate_size(tr)
        if err:
            raise KernelError(-err)
        tr.allocated_snapshot = True


def free_snapshot(tr) -> None:
    """``free_snapshot()``: back to the minimum size, emptied."""
    mem = tr.tracing.buffer_memory()
    tr.max_buffer.set_subbuf_order(0, mem)
    tr.max_buffer.resize(1, None, mem)
    tr.max_buffer.reset()
    tr.allocated_snapshot = False


def arm_snapshot(tr) -> None:
    """``tracing_arm_snapshot()``: one more user keeps it allocated."""
    if tr.snapshot_arms == UINT_MAX:
        raise KernelError(errno.EBUSY)
    tr.snapshot_arms += 1
    try:
        alloc_snapshot(tr)
    except KernelError:
        tr.snapshot_arms -= 1
        raise


def disarm_snapshot(tr) -> None:
    if tr.snapshot_arms:
        tr.snapshot_arms -= 1


def max_tr_switch(tr, old, new) -> None:
    """``tracing_set_tracer()`` from tracer ``old`` to ``new`` (None: ``new``
    failed its init, back to nop): a latency tracer (``use_max_tr``) arms
    the snapshot; leaving one frees it and disarms."""
    had = old.use_max_tr
    has = new is not None and new.use_max_tr
    if had and not has:
        if new is not None:
            free_snapshot(tr)
        disarm_snapshot(tr)
    elif has and not had:
        arm_snapshot(tr)


# --- swapping -------------------------------------------------------------------

def _stopped(tr) -> bool:
    """``tr->stop_count``: a reader paused the array (pause-on-trace)."""
    return bool(tr.buffer.record_disabled)


class MaxData:
    """What ``__update_max_tr()`` keeps of the worst section in the max
    buffer's ``trace_array_cpu`` of its CPU: the latency (ns), where the
    section started and ended, and the task it was of."""

    __slots__ = ("saved_latency", "critical_start", "critical_end", "comm", "pid", "uid", "nice",
                 "policy", "rt_priority")

    def __init__(self, latency, start, end, task):
        self.saved_latency = latency
        self.critical_start = start
        self.critical_end = end
        self.comm = task.comm if task is not None else ""
        self.pid = task.pid if task is not None else 0
        self.uid = 0                       # kernel threads and the simulated tasks: root
        prio = getattr(task, "prio", 120)
        self.nice = prio - 120 if prio >= 100 else 0      # static_prio - 120
        self.policy = getattr(task, "policy", 0)
        self.rt_priority = getattr(task, "rt_priority", 0)


def _record_max(tr, task, cpu: int, since: int, start: int, end: int) -> None:
    """``__update_max_tr()``: the max buffer is of ``cpu``, its entries from
    ``since`` on (the section's start) are shown; the task's comm is saved."""
    tr.max_buffer.time_start = since
    tr.max_cpu = cpu
    tr.max_data[cpu] = MaxData(tr.max_latency, start, end, task)
    if task is not None and task.pid:
        tr.tracing.savedcmd.save(task.pid, task.comm)


def update_max_tr(tr, task=None, cpu: int = 0, since: int = 0, start: int = 0, end: int = 0) -> None:
    """``update_max_tr()``: every CPU's main and snapshot buffers trade
    places; a latency tracer passes the task of the section (``task``), its
    CPU and when it started (``since``, ``start``/``end``: the addresses)."""
    if _stopped(tr) or not tr.allocated_snapshot:
        return
    main, snap = tr.buffer, tr.max_buffer
    snap.record_off = main.record_off        # the max buffer inherits the setting
    main.cpus, snap.cpus = snap.cpus, main.cpus
    if task is not None:
        _record_max(tr, task, cpu, since, start, end)


def update_max_tr_single(tr, cpu: int, task=None, since: int = 0, start: int = 0, end: int = 0) -> None:
    """``update_max_tr_single()``: ``ring_buffer_swap_cpu()`` of one CPU.  It
    does nothing while either buffer is switched off or disabled, or when
    their sizes differ; a latency tracer's record (``task``...) is kept
    either way, as ``__update_max_tr()`` runs whatever the swap did."""
    if _stopped(tr) or not tr.allocated_snapshot:
        return
    main, snap = tr.buffer, tr.max_buffer
    if main.cpus[cpu].nr_pages != snap.cpus[cpu].nr_pages or main.subbuf_order != snap.subbuf_order:
        pass                                     # -EINVAL
    elif main.record_off or main.record_disabled or snap.record_off or snap.record_disabled:
        pass                                     # -EAGAIN
    else:
        main.cpus[cpu], snap.cpus[cpu] = snap.cpus[cpu], main.cpus[cpu]
    if task is not None:
        _record_max(tr, task, cpu, since, start, end)


def snapshot_instance(tr, cpu: int, ts: int, pid: int, flags: int, pc: int) -> None:
    """``tracing_snapshot_instance()``, as a trigger or a probe takes it: not
    allocated, two lines go into the buffer and tracing stops there."""
    if not tr.allocated_snapshot:
        _puts(tr, cpu, ts, pid, flags, pc, "*** SNAPSHOT NOT ALLOCATED ***\n")
        _puts(tr, cpu, ts, pid, flags, pc, "*** stopping trace here!   ***\n")
        tr.set_tracing_on(False)
        return
    if tr.current.use_max_tr:                  # the latency tracer owns the max buffer
        _puts(tr, cpu, ts, pid, flags, pc, "*** LATENCY TRACER ACTIVE ***\n")
        _puts(tr, cpu, ts, pid, flags, pc, "*** Can not use snapshot (sorry) ***\n")
        return
    update_max_tr(tr)


def _puts(tr, cpu, ts, pid, flags, pc, text) -> None:
    """``trace_array_puts()``: a TRACE_PRINT entry made at this call site."""
    if not tr.flag("trace_printk"):
        return
    ks = tr.kernel.kallsyms
    ip = ks.addr_of("tracing_snapshot_instance_cond") or ks.addr_of("tracing_snapshot_instance") or 0
    entry = (ts, te.TRACE_PRINT, pid, flags, pc, ip, text)
    tr.write_entry(cpu, entry, te.TRACE_ENTRY_HDR + 8 + len(text) + 2)


# --- the snapshot files ---------------------------------------------------------

class SnapshotOps(TraceOps):
    """``snapshot`` and ``per_cpu/cpuN/snapshot`` (``snapshot_fops``)."""

    def open(self, f):
        tr = f.data
        # never paused (pause-on-trace spares the snapshot), O_TRUNC ignored
        f.private = TraceIter(paused=False, lat=False)   # tracing_snapshot_open(): no latency format
        if f.readable:
            self.pin(f, tr)                     # the snapshot buffer's CPUs
        ArrayFileOps.open(self, f)

    def ring(self, tr):
        return tr.max_buffer

    def read(self, f, off, size):
        """``s_start()``: EBUSY while a latency tracer uses the max buffer."""
        if f.data.current.use_max_tr:
            raise KernelError(errno.EBUSY)
        return super().read(f, off, size)

    def empty_help(self, tr, buf):
        cpus = buf.cpus if self.cpu is None else [buf.cpus[self.cpu]]
        if any(cb.entries for cb in cpus):
            return None
        return snapshot_help(tr, self.cpu)

    def write(self, f, data):
        """``tracing_snapshot_write()``"""
        tr = f.data
        tr.ensure_expanded()                    # tracing_update_buffers()
        val = user_ulong(data)
        if tr.current.use_max_tr:               # a latency tracer's max trace is there
            raise KernelError(errno.EBUSY)
        if tr.cond_snapshot is not None:        # a hist trigger's snapshot() owns it
            raise KernelError(errno.EBUSY)
        cpu = self.cpu
        if val == 0:
            if cpu is not None:
                raise KernelError(errno.EINVAL)
            if tr.allocated_snapshot:
                free_snapshot(tr)
        elif val == 1:
            if cpu is not None and not allow_swap(tr.kernel.config):
                raise KernelError(errno.EINVAL)
            if tr.allocated_snapshot:
                err = duplicate_size(tr, cpu)
                if err:
                    raise KernelError(-err)
            arm_snapshot(tr)
            if cpu is None:
                update_max_tr(tr)
            else:
                update_max_tr_single(tr, cpu)
            disarm_snapshot(tr)
        elif tr.allocated_snapshot:
            if cpu is None:
                tr.max_buffer.reset()
            else:
                tr.max_buffer.cpus[cpu].reset()
        return len(data)
