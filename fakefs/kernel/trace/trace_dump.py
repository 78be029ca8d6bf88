"""``ftrace_dump()`` of kernel/trace/trace.c: the ring buffer printed into
the kernel log, as the ``dump`` and ``cpudump`` function probes (and, on a
real machine, an oops with ``ftrace_dump_on_oops`` or sysrq-z) do.

Dumping turns tracing off on the array first, then takes every entry off
the buffer (of all CPUs, or of the CPU that asked for ``DUMP_ORIG``), each
printed in the latency format by the consuming iterator: one log record
per entry at the emergency level, between two rules of dashes, or one
"(ftrace buffer empty)" record.  The buffer is empty afterwards; tracing
stays off until ``tracing_on`` is written again.  A dump started while one
runs does nothing.
"""

from __future__ import annotations

from ..printk import KERN_EMERG
from .trace_iter import consume_next, formatter

KERN_TRACE = KERN_EMERG        # the level trace.c prints its dumps at
DUMP_ALL, DUMP_ORIG = "all", "orig"
RULE = "-" * 33


def ftrace_dump(tracing, mode: str, cpu: int, ts: int) -> None:
    """``ftrace_dump(mode)`` called on ``cpu`` at ``ts``: the top-level
    array (the probes' dump goes there whatever instance they are in)."""
    if tracing.dump_running:
        return
    tracing.dump_running = True
    try:
        ftrace_dump_one(tracing.global_trace, cpu if mode == DUMP_ORIG else None, ts)
    finally:
        tracing.dump_running = False


def ftrace_dump_one(tr, cpu, ts: int) -> None:
    """``ftrace_dump_one()``: ``cpu`` None dumps every CPU."""
    tr.set_tracing_on(False)
    log = tr.kernel.log

    def pr(text: str) -> None:
        log.printk(text, KERN_TRACE, ts=ts)

    pr("Dumping ftrace buffer:" if tr.name is None
       else "Dumping ftrace instance %s buffer:" % tr.name)
    # each entry by a reset iterator: its own "next" (delay 0), index 1
    line = formatter(tr).printer(lat=True)
    count = 0
    while True:
        got = consume_next(tr.buffer, cpu)
        if got is None:
            break
        if not count:
            pr(RULE)
        count += 1
        entry, on_cpu, lost = got
        text = line(entry, on_cpu, None, 1)
        if lost:
            text = "CPU:%d [LOST %d EVENTS]\n" % (on_cpu, lost) + text
        pr(text[:-1] if text.endswith("\n") else text)
    pr(RULE if count else "   (ftrace buffer empty)")
