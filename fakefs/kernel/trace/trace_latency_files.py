"""``tracing_thresh`` (top level) and ``tracing_max_latency`` (each array,
CONFIG_TRACER_MAX_TRACE, which the snapshot selects): nanosecond values
shown and written in microseconds (``tracing_nsecs_read/write()`` of
kernel/trace/trace.c).

A write is ``kstrtoul_from_user`` base 10 times 1000, kept modulo 2^64 as
an unsigned long; a read is ``%ld`` of the value divided by 1000 (-1 for
ULONG_MAX).  Only the latency tracers and function_graph act on them
(``update_thresh``, the max latency they record); this kernel has none of
them, so the values are kept and read back, as a stock 6.12 does with the
nop and function tracers.  ``tracing_thresh=`` on the command line sets the
threshold in microseconds (``set_tracing_thresh()``: base 0, ignored when
not a number).
"""

from __future__ import annotations

from ..fs.pseudo import FileOperations
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
