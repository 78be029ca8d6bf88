"""``/proc/sys/kernel/ftrace_enabled`` (kernel/trace/ftrace.c, CONFIG_FUNCTION_TRACER).

The row is ``{"ftrace_enabled", &ftrace_enabled, sizeof(int), 0644,
ftrace_enable_sysctl}``.  ``ftrace_enable_sysctl()`` parses with
``proc_dointvec``: any int is stored and read back as written (``2`` reads
``2``), a bad one is EINVAL and changes nothing.  Only a change of
``!!ftrace_enabled`` acts: to 0, ``ftrace_trace_function = ftrace_stub``
and ``ftrace_shutdown_sysctl()`` take the calls off every function
(``current_tracer`` may still say ``function``: its ops stay registered,
but no function entry is recorded and no function probe fires); back to
non-zero, ``ftrace_startup_sysctl()`` puts them back.  (A permanent ops, a
live patch, would make a 0 EBUSY; the simulated kernel has none.)

``ftrace_calls_enabled(kernel)`` is what the function-call paths ask
(``fakefs.sim.trace_activity``).  tools: ``trace-cmd start`` reads it and, as root,
writes 1 when it finds 0.
"""

from __future__ import annotations

from ..fs.proc.base import CtlTable, parse_dointvec_minmax, register_sysctl
from .ftrace_ops_list import ftrace_ops_update

INT_MIN, INT_MAX = -(1 << 31), (1 << 31) - 1


class FtraceSysctl:
    __slots__ = ("kernel", "value", "last", "changes")

    def __init__(self, kernel):
        self.kernel = kernel
        self.value = 1          # ftrace_enabled: int, 1 at boot
        self.last = True        # last_ftrace_enabled = !!ftrace_enabled
        # (instant, calls enabled) at each change of !!ftrace_enabled: what
        # a lazy counter of calls (the function profiler) goes by
        self.changes: list[tuple[int, bool]] = []

    def show(self) -> str:
        return "%d\n" % self.value

    def store(self, text: str) -> None:
        """``ftrace_enable_sysctl()`` for a write of ``text``."""
        value, _n = parse_dointvec_minmax(text.encode("latin-1"), INT_MIN, INT_MAX)
        self.value = value
        if bool(value) != self.last:      # ftrace_startup_sysctl() / ftrace_shutdown_sysctl()
            self.last = bool(value)
            self.changes.append((self.kernel.sim_time, self.last))
            ftrace_ops_update(self.kernel)     # the calls are patched again, or not

    def enabled_ns(self, t0: int, t1: int) -> int:
        """How long calls reached the ops in [t0, t1)."""
        on, at, total = True, t0, 0
        for t, state in self.changes:
            if t <= t0:
                on = state
                continue
            if t >= t1:
                break
            if on:
                total += t - at
            on, at = state, t
        return total + (t1 - at if on else 0)


def ftrace_calls_enabled(kernel) -> bool:
    """False while ``ftrace_enabled`` is 0: the function calls reach no ops."""
    st = kernel.ftrace_sysctl
    return st is None or st.last


def ftrace_sysctl_init(kernel) -> None:
    if kernel.tracing is None or not kernel.config.enabled("FUNCTION_TRACER"):
        return
    st = kernel.ftrace_sysctl = FtraceSysctl(kernel)
    register_sysctl(kernel, "kernel", [CtlTable("ftrace_enabled", 0o644, st.show, st.store)])
