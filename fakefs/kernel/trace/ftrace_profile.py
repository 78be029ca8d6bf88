"""The function profiler (kernel/trace/ftrace.c, CONFIG_FUNCTION_PROFILER).

``function_profile_enabled`` turns it on and off; ``trace_stat/functionN``
shows, per CPU, how many times each function was called while it was on
(the files are ``ftrace_files.py``'s, the sorted table ``trace_stat.py``'s).
The profiler is an ftrace_ops of its own, counting every call of every function the global
filter lets through (the top level's ``set_ftrace_filter`` and
``set_ftrace_notrace``, whose hash it shares; pids do not matter), whatever
``current_tracer`` and ``tracing_on`` say.  Turning it on empties the
tables; turning it off keeps them.

Its tables (a :class:`CpuProfile` per CPU) are filled by what makes the
calls, the machine (``counter``: :mod:`fakefs.sim.function_calls`, which
counts a stretch's calls when someone looks: ``settle()``, before a stat
file is opened or shown, and as the profiler is turned off).  With the
function graph tracer built in (CONFIG_FUNCTION_GRAPH_TRACER) each
function is also timed: Time, Avg and s^2.

A CPU's records are kept in the order the functions were first called
(``ftrace_profile_alloc()`` hands out the slots of its pages in that
order).
"""

from __future__ import annotations

import errno

from ..fs.pseudo import KernelError
from .ftrace_ops_list import ftrace_ops_list, ftrace_ops_update
from .trace_functions_graph_output import graph_duration

FUNCTION_STAT_HEADERS = ("  Function                               Hit\n"
                         "  --------                               ---\n")
GRAPH_STAT_HEADERS = ("  Function                               Hit    Time            Avg"
                      "             s^2\n"
                      "  --------                               ---    ----            ---"
                      "             ---\n")
U64 = (1 << 64) - 1
ULONG_MAX = (1 << 64) - 1


class CpuProfile:
    """``struct ftrace_profile_stat`` of one CPU: records (function
    address, hits, and with the graph tracer the time and the sum of
    squares) in the order they were handed out."""

    __slots__ = ("ips", "hits", "time", "time_sq", "slot_of")

    def __init__(self):
        self.reset()

    def reset(self) -> None:
        """``ftrace_profile_reset()``: every record is zeroed and free."""
        self.ips: list[int] = []
        self.hits: list[int] = []
        self.time: list[int] = []
        self.time_sq: list[int] = []
        self.slot_of: dict[int, int] = {}

    def add(self, ip: int, n: int, time: int = 0, time_sq: int = 0) -> None:
        s = self.slot_of.get(ip)
        if s is None:
            s = self.slot_of[ip] = len(self.ips)
            self.ips.append(ip)
            self.hits.append(n)
            self.time.append(time)
            self.time_sq.append(time_sq)
        else:
            self.hits[s] += n
            self.time[s] += time
            self.time_sq[s] += time_sq


class FunctionProfiler:
    """The profiler of a kernel: ``enabled``, a :class:`CpuProfile` per CPU
    (``stats``).  ``ops`` is the top level's ``ftrace.FtraceOps`` (the
    global filter), or None when the kernel has no dynamic ftrace."""

    def __init__(self, kernel, ops):
        self.kernel = kernel
        self.ops = ops
        self.enabled = False
        self.stats = [CpuProfile() for _ in range(kernel.nr_cpus)]
        # what counts the calls into ``stats`` (the machine's, which makes
        # them: fakefs.sim.function_calls.FunctionCalls); None: nothing calls
        self.counter = None
        self._names: dict[int, str] = {}
        # with the function graph tracer the profiler times each call
        # (profile_graph_entry/return): Time, Avg, s^2, sorted by time
        self.graph = kernel.config.enabled("FUNCTION_GRAPH_TRACER")

    # --- on and off -----------------------------------------------------------
    def set_enabled(self, on: bool) -> None:
        """``ftrace_profile_write()`` of 1 (after 0: the tables are emptied)
        or 0 (the tables stay)."""
        if on == self.enabled:
            return
        now = self.kernel.sim_time
        if on:
            for st in self.stats:
                st.reset()
            self.enabled = True
            if self.counter is not None:
                self.counter.started(now)
        else:
            if self.counter is not None:
                self.counter.count_until(now)
            self.enabled = False
        ftrace_ops_update(self.kernel)     # (un)register_ftrace_profiler()

    def settle(self) -> None:
        """The calls made up to the machine's present are in the tables
        (before the stat files' ``open`` and ``show``)."""
        if self.counter is not None:
            self.counter.settle()

    # --- the stat files (function_stat_*) ---------------------------------------
    def stat_start(self, cpu: int) -> list[int]:
        """The records of ``cpu`` in use, in the order they were handed out."""
        return list(range(len(self.stats[cpu].ips)))

    def stat_cmp_key(self, cpu: int, slot: int) -> int:
        """``function_stat_cmp()``: the time with the graph tracer, else the hits."""
        st = self.stats[cpu]
        return st.time[slot] if self.graph else st.hits[slot]

    def stat_headers(self) -> str:
        return GRAPH_STAT_HEADERS if self.graph else FUNCTION_STAT_HEADERS

    def stat_show(self, cpu: int, slot: int) -> str:
        """``function_stat_show()`` of a record (EBUSY if the tables were
        emptied since the file was opened and the record is free)."""
        st = self.stats[cpu]
        if slot >= len(st.ips) or not st.hits[slot]:
            raise KernelError(errno.EBUSY)
        ip = st.ips[slot]
        name = self._names.get(ip)
        if name is None:
            hit = self.kernel.kallsyms.lookup(ip)
            name = self._names[ip] = hit[0] if hit else "0x%x" % ip
        hits = st.hits[slot]
        if not self.graph:
            return "  %-30.30s  %10d\n" % (name, hits)
        time = st.time[slot]
        avg = time // hits
        thresh = self.kernel.tracing.tracing_thresh
        if thresh and avg < thresh:
            return ""
        stddev = 0
        denom = hits * (hits - 1) * 1000 & U64
        if denom:
            stddev = ((hits * st.time_sq[slot] & U64) - (time * time & U64)) & U64
            stddev //= denom
        return "  %-30.30s  %10d    %s    %s    %s\n" % (
            name, hits, graph_duration(time), graph_duration(avg), graph_duration(stddev))


def register_function_profiler(kernel, ops) -> FunctionProfiler:
    """The profiler (``ftrace_profile_tracefs()`` makes the files; the
    profiler's state exists from boot): while it is on, the machine is seen."""
    prof = kernel.tracing.function_profiler = FunctionProfiler(kernel, ops)
    kernel.add_machine_watcher(lambda: prof.enabled)
    if ops is not None:
        ftrace_ops_list(kernel).profiler = prof     # ftrace_profile_ops
    return prof
