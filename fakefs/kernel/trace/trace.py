"""Trace arrays (the top-level tracing directory and instances/*): kernel/trace/trace.c.

A :class:`TraceArray` owns a ring buffer, its option flags, the current
tracer and, for the top-level array, the stackmap.  ``init_tracer_tracefs``
declares the files each array shows; the file operations live in
``trace_files.py``.
"""

from __future__ import annotations

import collections
import errno
from itertools import groupby
from operator import itemgetter

from ..fs.pseudo import DirNode, DirOperations, KernelError
from ..lib.versioned import VersionedSet
from .event_list import register_events
from .trace_events_pid import EventPids
from ..mm.alloc_calls import DEFAULT_RAM
from ..mm.page_alloc import PAGE_SHIFT, PageAccount
from ._trace_commit import trace_stack, write_entry
from ._trace_events_raw import FixedRecords
from .ring_buffer import RingBuffer
from .trace_events_raw import fixed_fields
from .trace_sched_switch import SavedCmdlines, SavedTgids, resized
from .trace_stackmap import FtraceStackMap, BITS_DEFAULT
from .trace_clock import TRACE_CLOCKS, TraceClocks
from .trace_events_hist import HistRegistry
from .trace_events_trigger import clear_event_triggers
from .trace_nop import NopTracer
from .trace_snapshot import max_tr_switch
from .trace_flags import CORE_FLAGS, ZEROED_FLAGS, core_flag_names

TRACE_BUF_SIZE_DEFAULT = 1441792  # trace_buf_size: 1.4 MB per CPU
# the call site charged for ring-buffer pages (file, function, allocator)
RB_PAGES_SITE = ("kernel/trace/ring_buffer.c", "__rb_allocate_pages", "alloc_pages_node")

TRACING_LOG_ERRS_MAX = 8
TRACING_LOG_LOC_MAX = 128


class TraceArray:
    def __init__(self, tracing: "Tracing", name: str | None):
        self.tracing = tracing
        self.kernel = tracing.kernel
        self.name = name
        self.is_top = name is None
        k = self.kernel
        self.flag_names = core_flag_names(k.config)
        self.flags: dict[str, bool] = {}
        for fname, default, _top in CORE_FLAGS:
            if fname in self.flag_names:
                self.flags[fname] = default
        if not self.is_top:
            for fname in ZEROED_FLAGS:
                if fname in self.flags:
                    self.flags[fname] = False
        self.buffer = RingBuffer(k.nr_cpus, 1, records=tracing.fixed_records)  # minimum until expanded
        self.expanded = False
        self.buffer_size = TRACE_BUF_SIZE_DEFAULT
        self.tracers = {t.name: t for t in (cls(self) for cls in tracing.tracer_classes)}
        self.current = self.tracers["nop"]
        self.cpumask = (1 << k.nr_cpus) - 1
        self.clock = "local"
        self.clock_reader = None        # TraceClocks.reader(clock): None reads ns as they are
        self.max_latency = 0            # ns, tracing_max_latency (trace_latency_files)
        # the max buffer's CPU and its per-CPU records (trace_snapshot.MaxData)
        self.max_cpu = 0
        self.max_data: dict = {}
        self.stackmap: FtraceStackMap | None = None
        self.dir: DirNode | None = None
        self.open_refs = 0
        self.formatter = None
        self.enabled_events = VersionedSet()   # EVENT_FILE_FL_ENABLED
        self.event_pids = EventPids()          # set_event_pid, set_event_notrace_pid
        # soft mode (probes' enable_event/disable_event): events in soft_mode (with
        # their reference count) stay registered; soft_disabled ones record nothing
        self.soft_mode: dict = {}
        self.soft_disabled = VersionedSet()
        # hooks for per-array filtering (set by trace_events_filter / ftrace):
        #   event_filters[ev](entry) -> bool: keep this tracepoint hit?
        #   ftrace_ops.match(ip, pid) -> bool, ftrace_ops.after_call(tr, cpu, ts, ip, stack)
        #   (ftrace.FtraceOps, set while any filter, pid list or probe is;
        #   also .probes, .filtering() and .call_targets() for trace_activity)
        self.event_filters: dict = {}
        self.ftrace_ops = None
        self.filter_state = None          # trace_events_filter.EventFilters
        self.ftrace = None                # ftrace.FtraceOps of set_ftrace_filter & co.
        self.err_log = collections.deque(maxlen=TRACING_LOG_ERRS_MAX)   # error_log
        # the snapshot buffer (CONFIG_TRACER_SNAPSHOT, trace_snapshot.py): the
        # minimum until allocated; ``snapshot_arms`` counts the triggers and
        # probes keeping it allocated (``tr->snapshot``)
        self.max_buffer = (RingBuffer(k.nr_cpus, 1, records=tracing.fixed_records)
                           if k.config.enabled("TRACER_SNAPSHOT") else None)
        self.allocated_snapshot = False
        self.snapshot_arms = 0
        self.cond_snapshot = None       # (HistData, Action) of a hist snapshot() action
        # event -> trace_events_trigger.EventTriggers, for events with triggers
        self.event_triggers: dict = {}
        self.buffer_percent = 50          # per_cpu trace_pipe poll watermark
        self.tgid_recorded: set = set()   # EVENT_FILE_FL_RECORDED_TGID (trace_sched_switch)

    def log_err(self, loc: str, cmd: str, errs, err_type: int, pos: int) -> None:
        """``tracing_log_err()``: remember an error for ``error_log`` (the last
        TRACING_LOG_ERRS_MAX of them).  ``errs[err_type]`` is the text;
        ``pos`` the caret's offset in ``cmd``."""
        head = ("%s: error: " % loc)[:TRACING_LOG_LOC_MAX - 1]
        self.err_log.append((self.kernel.now, head, errs[err_type & 0xff], cmd,
                             pos & 0xffff))

    # --- state -------------------------------------------------------------
    def flag(self, name: str) -> bool:
        return self.flags.get(name, False)

    def tracing_is_on(self) -> bool:
        return not self.buffer.record_off

    def recording(self) -> bool:
        """Its buffer takes entries now: tracing on, and no reader paused it."""
        return not self.buffer.record_off and not self.buffer.record_disabled

    def reserves_on(self, cpu: int) -> bool:
        """A reserve on ``cpu`` may succeed: recording, and the CPU in
        tracing_cpumask (the kernel disables the others' buffers)."""
        return self.recording() and bool(self.cpumask >> cpu & 1)

    def follows_machine(self) -> bool:
        """What the simulated machine does may reach its buffer (a tracer,
        events, triggers or probes); a buffer of markers only does not."""
        return self.current.name != "nop" or bool(self.enabled_events) or self.acts_on_itself()

    def sees_machine(self) -> bool:
        """Anything of the machine matters to it: it follows the machine
        (above), or a pid list follows forks (event-fork, function-fork).
        Asked before every request while the machine stands still: the
        checks of ``follows_machine()`` and ``flag()``, inline."""
        if self.enabled_events or self.event_triggers or self.current.name != "nop":
            return True
        ops = self.ftrace_ops
        if ops is not None and ops.probes:
            return True
        flags = self.flags
        return bool(flags.get("event-fork") or flags.get("function-fork"))

    def acts_on_itself(self) -> bool:
        """Function probes or event triggers may switch its tracing, its
        events or its snapshot while the machine runs."""
        ops = self.ftrace_ops
        return bool(self.event_triggers) or (ops is not None and bool(ops.probes))

    def set_tracing_on(self, on: bool) -> None:
        self.buffer.record_off = not on

    def ensure_expanded(self) -> None:
        if not self.expanded:
            self.expanded = True
            self._resize(self.buffer_size, None)

    def resize_buffer(self, size: int, cpu: int | None = None, remember: bool = True) -> None:
        """``tracing_resize_ring_buffer()``: pages come from the machine's
        memory, ENOMEM (nothing changed) when it has too few."""
        self.expanded = True
        err = self._resize(size, cpu)
        if err:
            raise KernelError(-err)
        if cpu is None and remember:
            self.buffer_size = size

    def _resize(self, size: int, cpu: int | None) -> int:
        """``__tracing_resize_ring_buffer()``: the main buffer, then an
        allocated snapshot buffer to the same size; when that fails the main
        buffer goes back to its noted sizes.  0 or an -errno."""
        mem = self.tracing.buffer_memory()
        buf = self.buffer
        old = list(buf.noted)
        err = buf.resize(size, cpu, mem)
        if err or not self.allocated_snapshot:
            return err
        err = self.max_buffer.resize(size, cpu, mem)
        if err:
            for c in (range(len(old)) if cpu is None else (cpu,)):
                buf.resize(old[c], c, mem)
        return err

    def reset_buffer(self) -> None:
        """``tracing_reset_online_cpus()``: every CPU emptied, and the
        buffer's ``time_start`` is now."""
        self.buffer.reset()
        self.buffer.time_start = self.clock_now()

    def set_clock(self, name: str) -> None:
        """``tracing_set_clock()``: EINVAL for a clock it does not know; a
        new clock empties the buffer and the snapshot buffer, and entries
        are stamped with its readings from then on (``write_entry``)."""
        if name not in TRACE_CLOCKS:
            raise KernelError(errno.EINVAL)
        if self.clock != name:
            self.clock = name
            self.clock_reader = self.tracing.clocks.reader(name)
            self.reset_buffer()
            if self.max_buffer is not None:
                self.max_buffer.reset()
                self.max_buffer.time_start = self.buffer.time_start

    def next_stamp(self, ns: int) -> int:
        """The stamp an entry committed at ``ns`` gets (the counter's next
        reading, not taken)."""
        reader = self.clock_reader
        if reader is None:
            return ns
        if self.clock == "counter":
            return self.tracing.clocks.counter + 1
        return reader(ns)

    def clock_now(self) -> int:
        """The array's clock read now (``ring_buffer_time_stamp()``)."""
        ns = self.kernel.now
        return ns if self.clock_reader is None else self.clock_reader(ns)

    def find_cmdline(self, pid: int) -> str:
        return self.tracing.savedcmd.find(pid)

    def engage(self) -> None:
        """It may see the machine from now on (see ``Tracing.engaged``):
        called where an event is enabled, a trigger made, a tracer set, a
        probe registered or a fork-following flag set."""
        if not self.is_top:
            self.tracing.engaged.add(self)

    def find_tgid(self, pid: int) -> int:
        return self.tracing.tgids.find(pid)

    def set_flag(self, name: str, on: bool) -> None:
        """``set_tracer_flag()``"""
        if self.flags.get(name) == on:
            return
        self.current.flag_changed(self, name, on)     # the tracer may refuse (EINVAL)
        if name == "trace_printk_dest":
            self.tracing.set_printk_dest(self, on)
            return
        self.flags[name] = on
        if on and name in ("event-fork", "function-fork"):
            self.engage()
        if name == "record-tgid":
            tgids = self.tracing.tgids
            tgids.alloc()
            tgids.record(self.tracing.arrays(), on)

    def set_tracer(self, name: str) -> None:
        """``tracing_set_tracer()``"""
        t = self.tracers.get(name)
        if t is None:
            raise KernelError(errno.EINVAL)
        if not self.is_top and not t.allow_instances:
            raise KernelError(errno.EINVAL)
        self.ensure_expanded()
        if t is self.current:
            return
        if t.use_max_tr and self.cond_snapshot is not None:
            raise KernelError(errno.EBUSY)      # a hist trigger's snapshot() owns it
        old = self.current
        old.enabled = False
        old.reset(self)
        self.current = self.tracers["nop"]
        max_tr_switch(self, old, t)    # the snapshot: kept while a latency tracer is current
        self.engage()
        self.reset_buffer()          # tracer_init() -> tracing_reset_online_cpus()
        self.current = t             # (what init() registers asks for the current tracer)
        try:
            t.init(self)
        except KernelError:
            self.current = self.tracers["nop"]
            max_tr_switch(self, t, None)
            raise
        t.enabled = True

    def set_option(self, text: str) -> None:
        """``trace_set_options()``: ``name`` or ``noname``."""
        cmp = text.strip()
        neg = cmp.startswith("no")
        if neg:
            cmp = cmp[2:]
        if cmp in self.flags:
            self.set_flag(cmp, not neg)
            return
        if cmp in self.current.opts:
            self.current.set_flag(cmp, not neg)
            return
        raise KernelError(errno.EINVAL)

    def set_event_enabled(self, ev, on: bool) -> None:
        if on:
            self.ensure_expanded()       # tracing_update_buffers()
        self.event_enable_disable(ev, on, False)

    def event_enable_disable(self, ev, enable: bool, soft: bool) -> None:
        """``__ftrace_event_enable_disable()``: ``soft`` takes (enable) or drops (not
        enable) a soft-mode reference; a plain disable of one in soft mode soft-disables it."""
        if not enable:
            if soft:
                n = self.soft_mode.get(ev, 0) - 1
                if n > 0:
                    self.soft_mode[ev] = n
                    return
                self.soft_mode.pop(ev, None)
                disable = ev in self.soft_disabled
            else:
                disable = ev not in self.soft_mode
            if disable and ev in self.enabled_events:
                self.enabled_events.discard(ev)
                self.tracing.tgids.event_disabled(self.tgid_recorded, ev)
                self.tracing.tracepoint_use(ev, -1)
                self.tracing.file_changed(self, ev, False)
            if ev in self.soft_mode:
                self.soft_disabled.add(ev)
            else:
                self.soft_disabled.discard(ev)
            return
        if ev.tracepoint not in self.tracing.tracepoint_users and hasattr(ev, "first_use"):
            ev.first_use()        # a uprobe event's registration (may fail: KernelError)
        if not soft:
            self.soft_disabled.discard(ev)
        else:
            n = self.soft_mode.get(ev, 0) + 1
            self.soft_mode[ev] = n
            if n > 1:
                return
        if ev not in self.enabled_events:
            if soft:
                self.soft_disabled.add(ev)
            self.enabled_events.add(ev)
            self.engage()
            self.tracing.tgids.event_enabled(self.tgid_recorded, ev, self.flags.get("record-tgid", False))
            self.tracing.tracepoint_use(ev, 1)
            self.tracing.file_changed(self, ev, True)

    def event_ignored(self, ev, entry, cpu: int) -> bool:
        """Is a hit of ``ev`` left out of this array: by its pid lists
        (``set_event_pid``/``set_event_notrace_pid``) or its filter?"""
        if self.event_pids.ignore(ev.tracepoint, entry):
            return True
        flt = self.event_filters.get(ev)
        return flt is not None and not flt(entry, cpu)

    def event_recording(self, ev) -> bool:
        """Enabled and not soft-disabled: hits go into the buffer."""
        return ev in self.enabled_events and ev not in self.soft_disabled

    def event_enable_text(self, ev) -> str:
        """An event's ``enable`` file: 0/1, ``*`` while in soft mode."""
        s = "1" if self.event_recording(ev) else "0"
        if ev in self.soft_disabled or ev in self.soft_mode:
            s += "*"
        return s + "\n"

    # --- recording ---------------------------------------------------------
    def write_entry(self, cpu: int, entry, payload: int, into=None) -> bool:
        """Reserve and commit ``entry``, then ``_task_info()``.  ``into``: the
        CPU buffer it was reserved in before triggers ran (which may have
        switched tracing or swapped it out since); default: the CPU's now.
        Compiled (``_trace_commit.write_entry``)."""
        return write_entry(self, cpu, entry, payload, into)

    def _task_info(self, cpu: int, pid: int) -> None:
        """``pid`` committed on ``cpu``: its comm is saved (``record-cmd``) when another
        task committed last there, its tgid while tgids are recorded (``SavedTgids.ref``)."""
        tracing = self.tracing
        if pid != tracing.taskinfo_pid[cpu] and self.flags["record-cmd"]:
            tracing.taskinfo_pid[cpu] = pid
            t = self.kernel.sched.find(pid) if pid else None
            if t is not None:
                tracing.savedcmd.save(pid, t.comm)
        tgids = tracing.tgids
        if tgids.ref and pid != tgids.last[cpu]:     # the sched probes record tgids too
            t = self.kernel.sched.find(pid) if pid else None
            if t is not None:
                tgids.save(cpu, pid, t.tgid)

    def write_entries(self, cpu: int, entries: list, lengths) -> int:
        """``write_entry()`` of each of ``entries`` (in time order; in the
        buffer, ``lengths`` bytes each, or ``lengths[i]`` the i-th) in one
        go; returns how many were taken."""
        reader = self.clock_reader
        if reader is not None:
            entries = [(reader(e[0]),) + e[1:] for e in entries]
        n = self.buffer.write_many(cpu, entries, lengths, self.flags["overwrite"])
        # each run of one task's entries once (the same task again changes nothing)
        for pid, _ in groupby(map(itemgetter(2), entries[:n] if n < len(entries) else entries)):
            self._task_info(cpu, pid)
        return n

    def trace_stack(self, cpu: int, ts: int, pid: int, flags: int, pc: int, stack: tuple) -> None:
        """``__ftrace_trace_stack()`` with the stackmap series applied
        (compiled: ``_trace_commit.trace_stack``)."""
        trace_stack(self, cpu, ts, pid, flags, pc, stack)

    # --- instances -----------------------------------------------------------
    def destroy(self) -> None:
        mem = self.tracing.buffer_memory()
        if mem is not None:
            self.buffer.release(mem)
            if self.max_buffer is not None:
                self.max_buffer.release(mem)
        self.current.reset(self)
        ops = self.ftrace
        if ops is not None:
            ops.destroy()            # clear_ftrace_function_probes()


class InstancesDir(DirOperations):
    def __init__(self, tracing):
        self.tracing = tracing

    def mkdir(self, parent, name):
        self.tracing.instance_mkdir(name)

    def rmdir(self, parent, name):
        self.tracing.instance_rmdir(name)

    def observes(self, parent, name):
        """A new instance records nothing of the past (no tracer, no
        events): made at once.  One removed needs the machine caught up
        only if it records what the machine does."""
        tr = self.tracing.instances.get(name)
        return tr is not None and tr.follows_machine()


class Tracing:
    """All of tracing: the global trace array, instances, tracers."""

    def __init__(self, kernel, tracer_classes=(), init_instance=None):
        self.kernel = kernel
        self.tracer_classes = list(tracer_classes) + [NopTracer]
        # creates an instance's files (trace_files.init_tracer_tracefs)
        self.init_instance = init_instance
        self.clocks = TraceClocks(int(kernel.config.options.get("CONFIG_HZ") or 250),
                                  int(kernel.clock.boot_wall * 1e9))
        # the events whose records the compiled writer puts in the bytes (the
        # ones registered now: a dynamic event's id may be another's later)
        self.fixed_records = FixedRecords(self._fixed_fields)
        self._static_ids: frozenset = frozenset()
        self.global_trace = TraceArray(self, None)
        self.printk_trace = self.global_trace      # where trace_printk() writes
        self.tracing_thresh = 0                   # ns (trace_latency_files)
        self.graph = None                         # trace_functions_graph.GraphHashes, on first use
        self.instances: dict[str, TraceArray] = {}
        # the instances that ever had an event, a trigger, a tracer, a probe
        # or a fork-following flag (``TraceArray.engage``): the others
        # neither see the machine nor record what it does, and the checks
        # asked at every request (``machine_seen``, ``gap_threshold``) skip them
        self.engaged: set[TraceArray] = set()
        registered = register_events(kernel.config)
        self.events = registered.events            # registration order
        self.event_systems = collections.Counter(ev.system for ev in self.events)  # its events
        self.events_by_key = {(ev.system, ev.name): ev for ev in self.events}
        self.events_listing = registered.listing   # available_events order
        self.instance_listing = registered.instance_listing   # an instance's set_event order
        self.events_by_id = registered.by_id
        self._static_ids = frozenset(registered.by_id)
        self.ftrace_events = registered.ftrace        # catalogue entry types
        self.root: DirNode | None = None
        self.stackmap_bits = BITS_DEFAULT
        self.savedcmd = SavedCmdlines()           # saved_cmdlines (trace_sched_switch)
        self.tgids = SavedTgids(kernel.nr_cpus)   # saved_tgids
        # per CPU, the task whose comm was saved last (tracing_record_taskinfo)
        self.taskinfo_pid: list[int | None] = [None] * kernel.nr_cpus
        self.ftrace_records = None        # ftrace_records.FtraceRecords, built on first use
        self.function_profiler = None     # ftrace_profile.FunctionProfiler (CONFIG_FUNCTION_PROFILER)
        self._buffer_pages: PageAccount | None = None
        # how many enabled events (over all arrays) record each tracepoint;
        # ``probe_hooks`` get (tracepoint name, in use) when that starts or stops
        self.tracepoint_users: dict[str, int] = {}
        self.probe_hooks: list = []
        # ``file_hooks`` get (array, event, enabled) when an event starts or
        # stops being enabled (soft or not) in one array (its ``reg``)
        self.file_hooks: list = []
        self.dyn_events = None        # trace_dynevent.DynEvents, with kprobe events
        self.hist_named = HistRegistry()          # named hist triggers, of all arrays
        self.synth_ops = None                     # trace_events_synth.SynthEventOps, at init
        # events generated by triggers while a record is being committed
        # (trace_events_commit.nested_commit), or None
        self.nested: list | None = None
        self.dump_running = False                 # ftrace_dump(): one at a time (trace_dump)

    def _fixed_fields(self, typ: int):
        """``fixed_fields()`` of the event of type ``typ`` registered at
        boot, else None (``fixed_records``)."""
        ev = self.events_by_id.get(typ) if typ in self._static_ids else None
        return fixed_fields(ev) if ev is not None else None

    def file_changed(self, tr, ev, on: bool) -> None:
        """Event ``ev`` starts (``on``) or stops being enabled in array ``tr``."""
        for hook in self.file_hooks:
            hook(tr, ev, on)

    def buffer_memory(self) -> PageAccount | None:
        """Where ring-buffer pages come from: the page allocator, charged
        to ``__rb_allocate_pages`` (a kernel without one: the default RAM).
        None during boot: the allocator's boot replay has boot's pages."""
        if self._buffer_pages is None and self.kernel.booted:
            pa = self.kernel.page_alloc
            tag = None
            if pa is not None:
                tags = [t for t in pa.at.find_all(*RB_PAGES_SITE[:2]) if t.callee == RB_PAGES_SITE[2]]
                tag = tags[0] if tags else None
            self._buffer_pages = PageAccount(pa, tag, DEFAULT_RAM >> PAGE_SHIFT)
        return self._buffer_pages

    def arrays(self):
        yield self.global_trace
        yield from self.instances.values()

    def tracepoint_use(self, ev, delta: int) -> None:
        """An event recording ``ev.tracepoint`` was enabled (+1) or
        disabled (-1) somewhere: the trace event code's probe is on the
        tracepoint while any is (``trace_event_reg``)."""
        name = ev.tracepoint
        n = self.tracepoint_users.get(name, 0) + delta
        if n:
            self.tracepoint_users[name] = n
        else:
            self.tracepoint_users.pop(name, None)
        if (n == 0) != (n - delta == 0):
            for hook in self.probe_hooks:
                hook(name, n > 0)

    def save_cmdline(self, pid: int) -> None:
        """``trace_save_cmdline()`` for a process outside the simulation (a
        shell writing trace_marker): its comm comes from the host, if the
        daemon provided a way to look it up."""
        if pid and self.kernel.sched.find(pid) is None:
            lookup = self.kernel.host_comm
            comm = lookup(pid) if lookup else None
            if comm:
                self.savedcmd.save(pid, comm)

    def resize_saved_cmdlines(self, val: int) -> None:
        """A new, empty table: every CPU's next committing task is saved."""
        self.savedcmd = resized(val)
        self.taskinfo_pid[:] = [None] * self.kernel.nr_cpus   # (in place: commits hold it)

    def instance_mkdir(self, name: str) -> None:
        if name in self.instances:
            raise KernelError(errno.EEXIST)
        tr = TraceArray(self, name)
        err = tr.buffer.allocate(tr.buffer_size, self.buffer_memory())
        if err:
            raise KernelError(-err)
        tr.expanded = True
        inst_dir = self.root.children["instances"]
        tr.dir = self.kernel.tree.create_dir(name, inst_dir, 0o750)
        self.instances[name] = tr
        if self.init_instance is not None:
            self.init_instance(tr, tr.dir)

    def instance_rmdir(self, name: str) -> None:
        tr = self.instances.get(name)
        if tr is None:
            raise KernelError(errno.ENODEV)
        if tr.open_refs:
            raise KernelError(errno.EBUSY)
        clear_event_triggers(tr)
        tr.destroy()
        for ev in tr.enabled_events:
            self.tracepoint_use(ev, -1)
            self.tgids.event_disabled(tr.tgid_recorded, ev)
            self.file_changed(tr, ev, False)
        tr.enabled_events.clear()
        if self.printk_trace is tr:
            self.update_printk_trace(self.global_trace)
        del self.instances[name]
        self.engaged.discard(tr)
        self.kernel.tree.remove(tr.dir)


    def update_printk_trace(self, tr) -> None:
        """``update_printk_trace()``: ``tr`` takes trace_printk() output and
        the flag, the array that had them loses the flag."""
        if self.printk_trace is tr:
            return
        self.printk_trace.flags["trace_printk_dest"] = False
        self.printk_trace = tr
        tr.flags["trace_printk_dest"] = True

    def set_printk_dest(self, tr, on: bool) -> None:
        """options/trace_printk_dest: one array always has it; clearing it
        gives it back to the top level, which cannot clear its own."""
        if on:
            self.update_printk_trace(tr)
        elif self.printk_trace is self.global_trace:
            raise KernelError(errno.EINVAL)
        elif self.printk_trace is tr:
            self.update_printk_trace(self.global_trace)
