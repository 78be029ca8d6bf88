"""The tracefs files of a trace array (``init_tracer_tracefs()`` and friends).

Each file is declared with name, mode, parent, data and an operations
object, as kernel/trace/trace.c does with ``trace_create_file()``.
"""

from __future__ import annotations

import errno

from ..fs.pseudo import FileOperations, KernelError, TRACE_MODE_READ, TRACE_MODE_WRITE
from ..lib.bitmap import bitmap_parse, bitmap_string
from ..mm.slub import KMALLOC_MAX_SIZE
from ..lib.kstrtox import ULONG_MAX
from .readme import readme_text
from . import trace_entries as te
from .trace_events import event_trace_add_tracer, set_events
from .trace_events_pid import event_pid_files
from .trace import InstancesDir
from .trace_flags import TOP_LEVEL_FLAGS
from .trace_parser import EVENT_BUF_SIZE, get_user_word, user_ulong
from .trace_printk import PrintkFormatsOps
from .trace_stackmap import StackMapOps, StackMapStatOps, StackMapBinOps
from .trace_iter import CpuStatsOps, TraceOps, TracePipeOps
from .trace_snapshot import SnapshotOps
from .trace_events_commit import marker_stack, trace_print_commit
from .trace_buffer_files import (FAULTED_SIZE, BufferPercentOps, BufferSubbufSizeOps,
                                 SavedTgidsOps, SnapshotRawOps, TraceMarkerRawOps, TracePipeRawOps,
                                 marker_writer)
from .trace_ref import ArrayFileOps
from .trace_latency_files import MaxLatencyOps, TracingThreshOps
from .trace_clock import TRACE_CLOCKS
from .ftrace_files import ftrace_create_files, pid_files_wanted



def _text(data: bytes) -> str:
    return data.decode("latin-1")


# --- simple control files ---------------------------------------------------

class TracingOnOps(ArrayFileOps):
    def __init__(self, tr):
        self.tr = tr

    @property
    def observes(self) -> bool:
        """Only function probes and event triggers (traceon/traceoff,
        snapshot) switch tracing on and off while nobody writes: then what
        it reads depends on the machine."""
        return self.tr.acts_on_itself()

    def show(self, f):
        return "%d\n" % (1 if f.data.tracing_is_on() else 0)

    def write(self, f, data):
        val = bool(user_ulong(data))
        if val != f.data.tracing_is_on():     # rb_simple_write()
            f.data.set_tracing_on(val)
        return len(data)


class CurrentTracerOps(ArrayFileOps):
    observes = False

    def show(self, f):
        return f.data.current.name + "\n"

    def write(self, f, data):
        if len(data) > 99:
            raise KernelError(errno.EINVAL)
        name = _text(data).strip()
        tr = f.data
        if name != tr.current.name or not tr.expanded:     # else set_tracer() changes nothing
            tr.set_tracer(name)
        return len(data)


class AvailableTracersOps(ArrayFileOps):
    observes = False

    def show(self, f):
        tr = f.data
        names = [t.name for t in tr.tracers.values() if tr.is_top or t.allow_instances]
        return " ".join(names) + "\n"


class TraceOptionsOps(ArrayFileOps):
    observes = False

    def show(self, f):
        tr = f.data
        out = []
        for name in tr.flag_names:
            out.append(("%s\n" if tr.flags[name] else "no%s\n") % name)
        for name, on in tr.current.opts.items():
            out.append(("%s\n" if on else "no%s\n") % name)
        return "".join(out)

    def write(self, f, data):
        if len(data) >= 64:
            raise KernelError(errno.EINVAL)
        tr = f.data
        name = cmp = _text(data).strip()
        if name.startswith("no"):
            name = name[2:]
        if name in tr.flags and tr.flags[name] == (name == cmp):
            return len(data)                       # set_flag() would change nothing
        if name not in tr.flags and name not in tr.current.opts:
            raise KernelError(errno.EINVAL)
        tr.set_option(_text(data))
        return len(data)


class CoreOptionOps(FileOperations):
    """options/<flag>: ``0``/``1``."""

    observes = False

    def show(self, f):
        tr, name = f.data
        return "1\n" if tr.flags.get(name) else "0\n"

    def write(self, f, data):
        tr, name = f.data
        val = user_ulong(data)
        if val not in (0, 1):
            raise KernelError(errno.EINVAL)
        if tr.flags.get(name) != bool(val):        # else set_flag() changes nothing
            tr.set_flag(name, bool(val))
        return len(data)


class TracerOptionOps(FileOperations):
    """options/<tracer option> (func_stack_trace, ...)."""

    observes = False

    def show(self, f):
        tracer, name = f.data
        return "1\n" if tracer.opts.get(name) else "0\n"

    def write(self, f, data):
        tracer, name = f.data
        val = user_ulong(data)
        if val not in (0, 1):
            raise KernelError(errno.EINVAL)
        if tracer.opts.get(name) != bool(val):   # only a change asks the tracer
            tracer.set_flag(name, bool(val))
        return len(data)


class BufferSizeOps(ArrayFileOps):
    """buffer_size_kb (top and per_cpu)."""

    observes = False

    def __init__(self, cpu=None):
        self.cpu = cpu

    def show(self, f):
        tr = f.data
        noted = tr.buffer.noted        # trace_array_cpu.entries, not the ring's pages
        sizes = set(noted) if self.cpu is None else {noted[self.cpu]}
        if len(sizes) != 1:
            return "X\n"
        kb = sizes.pop() >> 10
        if not tr.expanded:
            return "%d (expanded: %d)\n" % (kb, tr.buffer_size >> 10)
        return "%d\n" % kb

    def write(self, f, data):
        tr = f.data
        val = user_ulong(data)
        if not val:
            raise KernelError(errno.EINVAL)
        tr.resize_buffer((val << 10) & ULONG_MAX, self.cpu)     # the KB of an unsigned long
        return len(data)


class BufferTotalSizeOps(ArrayFileOps):
    observes = False

    def show(self, f):
        tr = f.data
        total = sum(size >> 10 for size in tr.buffer.noted)
        if not tr.expanded:
            return "%d (expanded: %d)\n" % (total, (tr.buffer_size >> 10) * len(tr.buffer.cpus))
        return "%d\n" % total


class FreeBufferOps(ArrayFileOps):
    def write(self, f, data):
        return len(data)

    def release(self, f):
        tr = f.data
        super().release(f)
        if tr.flag("disable_on_free"):
            tr.set_tracing_on(False)
        try:
            tr.resize_buffer(1, None, remember=False)
        except KernelError:
            pass         # EBUSY while a reader has trace open: the kernel ignores it too


class TraceClockOps(ArrayFileOps):
    observes = False

    def show(self, f):
        cur = f.data.clock
        return " ".join("[%s]" % c if c == cur else c for c in TRACE_CLOCKS) + "\n"

    def write(self, f, data):
        f.data.set_clock(_text(data).strip())
        return len(data)


class CpumaskOps(ArrayFileOps):
    """tracing_cpumask: ``%*pb`` of the mask; cpumask_parse_user() on write."""

    observes = False

    def show(self, f):
        return bitmap_string(f.data.cpumask, f.data.kernel.nr_cpus) + "\n"

    def write(self, f, data):
        tr = f.data
        if not data or len(data) > KMALLOC_MAX_SIZE:       # tracing_cpumask_write()
            raise KernelError(errno.EINVAL)
        try:
            mask = bitmap_parse(_text(data), tr.kernel.nr_cpus)
        except OSError as e:
            raise KernelError(e.errno)
        tr.cpumask = mask
        return len(data)


class TimestampModeOps(ArrayFileOps):
    observes = False

    def show(self, f):
        return "[delta] absolute\n"


class ReadmeOps(FileOperations):
    observes = False

    def show(self, f):
        k = f.data.kernel
        return readme_text(k.config, pid_files_wanted(k))


class SavedCmdlinesOps(FileOperations):
    def show(self, f):
        return f.data.tracing.savedcmd.text()


class SavedCmdlinesSizeOps(FileOperations):
    observes = False

    def show(self, f):
        return "%d\n" % f.data.tracing.savedcmd.cmdline_num

    def write(self, f, data):
        val = user_ulong(data)
        f.data.tracing.resize_saved_cmdlines(val)
        return len(data)


TRACE_MARKER_MAX_SIZE = 4096


class TraceMarkerOps(ArrayFileOps):
    """trace_marker: every write becomes a TRACE_PRINT entry.

    A write longer than the largest event the ring buffer can hold is cut to
    fit and the shorter count returned, so the writer sends the rest as the
    next entry (``tracing_mark_write()``).
    """

    writes_data = True

    def write(self, f, data):
        tr = f.data
        if not tr.flag("markers"):
            raise KernelError(errno.EINVAL)
        if not tr.tracing_is_on():
            raise KernelError(errno.EBADF)
        tr.ensure_expanded()
        cnt = min(len(data), TRACE_MARKER_MAX_SIZE)
        meta = te.TRACE_ENTRY_HDR + 8 + 2          # print_entry + '\n' + '\0'
        max_event = tr.buffer.max_event_size()
        if cnt + meta > max_event:
            cnt = max_event - meta
        size = cnt + meta + max(0, FAULTED_SIZE - cnt)
        k = tr.kernel
        msg = _text(data[:cnt])
        if not msg.endswith("\n"):
            msg += "\n"
        ip = k.kallsyms.addr_of("tracing_mark_write") or 0

        def write(pid, cpu, ts):
            # tracing_gen_ctx() in the writer's system call: irqs on, no lock held
            entry = (ts, te.TRACE_PRINT, pid, k.sched.flags(cpu, 0), 0, ip, msg)
            if not trace_print_commit(tr, cpu, entry, size, _text(data[:cnt]), lambda: marker_stack(k)):
                raise KernelError(errno.EBADF)      # the reserve failed: "as if not open for write"
            return cnt
        return marker_writer(tr, f, write)      # what ran before is traced before the marker


class SetEventOps(ArrayFileOps):
    """set_event: ``[!][system:]event`` tokens; O_TRUNC disables every event."""


    def open(self, f):
        if f.trunc:
            tr = f.data
            set_events(tr, list(tr.enabled_events), False)
        super().open(f)

    def show(self, f):
        tr = f.data
        order = tr.tracing.events_listing if tr.is_top else tr.tracing.instance_listing
        return "".join("%s:%s\n" % (ev.system, ev.name) for ev in order if ev in tr.enabled_events)

    def write(self, f, data):
        """One ``[!][system:]event`` word per write; returns the bytes it used."""
        tr = f.data
        token, used = get_user_word(data.decode("latin-1"), EVENT_BUF_SIZE + 1)
        if token is not None:
            on = not token.startswith("!")
            token = token[1:] if not on else token
            if ":" in token:
                system, _, name = token.partition(":")
                match = None
            else:
                system = name = None
                match = token
            hits = [ev for ev in tr.tracing.events
                    if (match is not None and match in (ev.name, ev.system))
                    or (match is None and system in ("", "*", ev.system)
                        and name in ("", "*", ev.name))]
            if not hits:
                raise KernelError(errno.EINVAL)
            set_events(tr, hits, on)
        return used


class AvailableEventsOps(FileOperations):
    observes = False

    def show(self, f):
        return "".join("%s:%s\n" % (ev.system, ev.name) for ev in f.data.tracing.events_listing)


# --- error_log -----------------------------------------------------------------

CMD_PREFIX = "  Command: "


class ErrorLogOps(ArrayFileOps):
    """error_log: one record per error; opening with O_TRUNC clears it, writes
    are accepted and ignored."""

    observes = False

    def open(self, f):
        if f.trunc:
            f.data.err_log.clear()
        super().open(f)

    def show(self, f):
        out = []
        for ts, head, text, cmd, pos in f.data.err_log:
            sec, nsec = divmod(ts, 1_000_000_000)
            out.append("[%5d.%06d] %s%s\n%s%s\n%s^\n"
                       % (sec, nsec // 1000, head, text, CMD_PREFIX, cmd,
                          " " * (len(CMD_PREFIX) + pos)))
        return "".join(out)

    def write(self, f, data):
        return len(data)


# --- tree --------------------------------------------------------------------

def init_tracer_tracefs(tr, d) -> None:
    """Files every trace array has (top-level and instances)."""
    tree = tr.kernel.tree
    W, R = TRACE_MODE_WRITE, TRACE_MODE_READ
    f = tree.create_file
    f("available_tracers", R, d, tr, AvailableTracersOps())
    f("current_tracer", W, d, tr, CurrentTracerOps())
    f("tracing_cpumask", W, d, tr, CpumaskOps())
    f("trace_options", W, d, tr, TraceOptionsOps())
    f("trace", W, d, tr, TraceOps())
    f("trace_pipe", R, d, tr, TracePipeOps())
    f("buffer_size_kb", W, d, tr, BufferSizeOps())
    f("buffer_total_size_kb", R, d, tr, BufferTotalSizeOps())
    f("free_buffer", 0o200, d, tr, FreeBufferOps())
    f("trace_marker", 0o220, d, tr, TraceMarkerOps())
    f("trace_marker_raw", 0o220, d, tr, TraceMarkerRawOps())
    f("trace_clock", W, d, tr, TraceClockOps())
    f("tracing_on", W, d, tr, TracingOnOps(tr))
    f("timestamp_mode", R, d, tr, TimestampModeOps())
    f("buffer_percent", W, d, tr, BufferPercentOps())
    f("buffer_subbuf_size_kb", W, d, tr, BufferSubbufSizeOps())
    if tr.max_buffer is not None:      # CONFIG_TRACER_SNAPSHOT selects TRACER_MAX_TRACE
        f("tracing_max_latency", W, d, tr, MaxLatencyOps())
        f("snapshot", W, d, tr, SnapshotOps())
    tr.err_log.clear()
    f("error_log", W, d, tr, ErrorLogOps())
    # options/ and per_cpu/ are filled in when first looked at (an
    # instance's mkdir makes neither: what nobody looks at costs nothing)
    tree.create_dir("options", d, 0o750, data=tr, populate=_populate_options)
    tree.create_dir("per_cpu", d, 0o750, data=tr, populate=_populate_per_cpu,
                    subdirs=tr.kernel.nr_cpus)
    event_trace_add_tracer(tr, d)
    f("set_event", W, d, tr, SetEventOps())
    event_pid_files(tr, d)
    ftrace_create_files(tr, d)


def create_top_level_files(tracing, root) -> None:
    tr = tracing.global_trace
    tree = tracing.kernel.tree
    W, R = TRACE_MODE_WRITE, TRACE_MODE_READ
    f = tree.create_file
    f("tracing_thresh", W, root, tracing, TracingThreshOps())
    f("README", R, root, tr, ReadmeOps())
    f("saved_cmdlines", R, root, tr, SavedCmdlinesOps())
    f("saved_cmdlines_size", W, root, tr, SavedCmdlinesSizeOps())
    f("saved_tgids", R, root, tr, SavedTgidsOps())
    f("available_events", R, root, tr, AvailableEventsOps())      # top level only
    tree.create_dir("instances", root, 0o750, dops=InstancesDir(tracing))
    if tr.stackmap is not None:
        ks = tracing.kernel.kallsyms
        f("stack_map", W, root, tr.stackmap, StackMapOps(ks))
        f("stack_map_stat", R, root, tr.stackmap, StackMapStatOps())
        f("stack_map_bin", R, root, tr.stackmap, StackMapBinOps())
    # trace_printk.c's fs_initcall, after trace.c's (link order)
    f("printk_formats", R, root, tr, PrintkFormatsOps(tracing.kernel.kallsyms))


def _populate_options(opts) -> None:
    tr = opts.data
    f = tr.kernel.tree.create_file
    for name in tr.flag_names:
        if tr.is_top or name not in TOP_LEVEL_FLAGS:
            f(name, TRACE_MODE_WRITE, opts, (tr, name), CoreOptionOps())
    for tracer in tr.tracers.values():
        for oname in tracer.opts:
            if oname not in opts.children:
                f(oname, TRACE_MODE_WRITE, opts, (tracer, oname), TracerOptionOps())


def _populate_per_cpu(pcpu) -> None:
    tr = pcpu.data
    tree = tr.kernel.tree
    W, R = TRACE_MODE_WRITE, TRACE_MODE_READ
    f = tree.create_file
    for cpu in range(tr.kernel.nr_cpus):
        cd = tree.create_dir("cpu%d" % cpu, pcpu, 0o750)
        f("buffer_size_kb", W, cd, tr, BufferSizeOps(cpu))
        f("stats", R, cd, tr, CpuStatsOps(cpu))
        f("trace", W, cd, tr, TraceOps(cpu))
        f("trace_pipe", R, cd, tr, TracePipeOps(cpu))
        f("trace_pipe_raw", R, cd, tr, TracePipeRawOps(cpu))
        if tr.max_buffer is not None:
            f("snapshot", W, cd, tr, SnapshotOps(cpu))
            f("snapshot_raw", R, cd, tr, SnapshotRawOps(cpu))
