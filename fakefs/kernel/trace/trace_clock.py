"""The clocks ``trace_clock`` offers (``trace_clocks[]`` of
kernel/trace/trace.c, the clock functions of kernel/trace/trace_clock.c):
each clock's name, in the kernel's order, and whether it counts
nanoseconds (``in_ns``: a hist trigger's ``common_timestamp.usecs``
divides only those)."""

from __future__ import annotations

# (name, in_ns)
TRACE_CLOCK_TABLE = (
    ("local", True), ("global", True), ("counter", False), ("uptime", False),
    ("perf", True), ("mono", True), ("mono_raw", True), ("boot", True), ("tai", True),
    ("x86-tsc", False),
)
TRACE_CLOCKS = [name for name, _ns in TRACE_CLOCK_TABLE]
_IN_NS = dict(TRACE_CLOCK_TABLE)


def clock_in_ns(name: str) -> bool:
    """``trace_clock_in_ns()`` of a clock name."""
    return _IN_NS.get(name, True)
