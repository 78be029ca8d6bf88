"""``tracing_thresh`` (top level) and ``tracing_max_latency`` (each array,
CONFIG_TRACER_MAX_TRACE, which the snapshot selects): nanosecond values
shown and written in microseconds (``tracing_nsecs_read/write()`` of
kernel/trace/trace.c).

A write is ``kstrtoul_from_user`` base 10 times 1000, kept modulo 2^64 as
an unsigned long; a read is ``%ld`` of the value divided by 1000 (-1 for
ULONG_MAX).  The latency tracers act on them (``report_latency()``: above
the threshold when one is set, else above the max latency, which they set;
see :class:`LatencyTracer`); the nop and function tracers only keep them.  ``tracing_thresh=`` on the command line sets the
threshold in microseconds (``set_tracing_thresh()``: base 0, ignored when
not a number).
"""

from __future__ import annotations

import errno

from ..fs.pseudo import FileOperations, KernelError
from .trace_nop import Tracer
from .trace_parser import user_ulong
from .trace_ref import ArrayFileOps

ULONG = (1 << 64) - 1


def nsecs_text(ns: int) -> str:
    """``tracing_nsecs_read()``"""
    if ns == ULONG:
        return "-1\n"
    us = ns // 1000
    return "%d\n" % (us - (1 << 64) if us >> 63 else us)


def nsecs_write(data: bytes) -> int:
    """``tracing_nsecs_write()``: microseconds in, nanoseconds kept."""
    return user_ulong(data) * 1000 & ULONG


class TracingThreshOps(FileOperations):
    """``tracing_thresh``: ``f.data`` is the Tracing."""

    observes = False

    def show(self, f):
        return nsecs_text(f.data.tracing_thresh)

    def write(self, f, data):
        f.data.tracing_thresh = nsecs_write(data)
        return len(data)


class MaxLatencyOps(ArrayFileOps):
    """``tracing_max_latency`` of one trace array (pins it while open)."""

    observes = False

    def show(self, f):
        return nsecs_text(f.data.max_latency)

    def write(self, f, data):
        f.data.max_latency = nsecs_write(data)
        return len(data)


def report_latency(tr, delta: int) -> bool:
    """``report_latency()`` (trace_irqsoff.c, trace_sched_wakeup.c): at
    least the threshold when one is set, else above the array's max."""
    thresh = tr.tracing.tracing_thresh
    if thresh:
        return delta >= thresh
    return delta > tr.max_latency


class LatencyTracer(Tracer):
    """What the irqsoff and wakeup families share: the max buffer, one
    array at a time per family (``busy``, a flag of the Tracing: EBUSY),
    ``overwrite`` and ``latency-format`` set while current and put back at
    reset, clearing ``overwrite`` refused (``trace_keep_overwrite()``)."""

    allow_instances = True
    use_max_tr = True
    print_max = True
    busy = ""

    def __init__(self, tr):
        super().__init__(tr)
        self.saved_flags = None

    def take(self, tr) -> None:
        """The start of the tracer's init: busy, the options, max latency 0."""
        if getattr(tr.tracing, self.busy, False):
            raise KernelError(errno.EBUSY)
        self.saved_flags = (tr.flag("latency-format"), tr.flag("overwrite"))
        tr.set_flag("overwrite", True)        # non overwrite screws up the latency tracers
        tr.set_flag("latency-format", True)
        tr.max_latency = 0
        setattr(tr.tracing, self.busy, True)

    def give_back(self, tr) -> None:
        """The end of its reset: the two options as they were, not busy."""
        if self.saved_flags is not None:
            lat, overwrite = self.saved_flags
            tr.set_flag("latency-format", lat)
            tr.set_flag("overwrite", overwrite)
            self.saved_flags = None
        setattr(tr.tracing, self.busy, False)

    def flag_changed(self, tr, name: str, on: bool) -> None:
        if self.enabled and name == "overwrite" and not on:
            raise KernelError(errno.EINVAL)
