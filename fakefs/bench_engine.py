"""How fast the simulated machine runs: simulated seconds per CPU second.

In-process, manual clock, 2 simulated CPUs, seed 3, default rates; the
machine caught up 10 ms at a time for ``SPAN_NS``.  Each configuration runs
with the compiled data plane (docs/data-plane.md) and, as the baseline from
the same run, with the walk in plain Python (``walk_reference``, the old
path).  Real time is 1.0: above it the machine runs faster than the time it
simulates.  ``python -m fakefs.bench engine``.
"""

from __future__ import annotations

import contextlib
import statistics
import time

from .kernel.walk_reference import use_reference

T = "sys/kernel/tracing/"
# a second: sustained tracing meets the path cache's restarts (the
# function tracer fills FRAME_CAP's stacks in seconds), a shorter span would not
SPAN_NS = 1_000_000_000
STEP_NS = 10_000_000
ROUNDS = 3
CONFIGS = (
    ("function tracer", (("current_tracer", "function"),)),
    ("every event", (("events/enable", "1"),)),
    ("function + stacktrace + stackmap + every event",
     (("current_tracer", "function"), ("events/enable", "1"),
      ("options/stacktrace", "1"), ("options/stackmap", "1"))),
    ("sched_switch only", (("events/sched/sched_switch/enable", "1"),)),
)


def sim_seconds_per_cpu_second(settings, reference: bool = False) -> float:
    """One run: ``SPAN_NS`` of the machine with ``settings`` written."""
    from . import sim
    from .kernel.fs.pseudo import kernel_write
    from .kernel.time import ManualClock
    with use_reference() if reference else contextlib.nullcontext():
        k = sim.boot(seed=3, nr_cpus=2, clock=ManualClock(), host_kallsyms=False)
        for path, value in settings:
            kernel_write(k.tree, T + path, value.encode())
        k.clock.advance(STEP_NS)
        k.run_until_now()
        t0 = time.process_time()
        for _ in range(SPAN_NS // STEP_NS):
            k.clock.advance(STEP_NS)
            k.run_until_now()
        return SPAN_NS / 1e9 / (time.process_time() - t0)


def bench_engine() -> list[tuple[str, float, str]]:
    rows = []
    for label, settings in CONFIGS:
        new = statistics.median(sim_seconds_per_cpu_second(settings) for _ in range(ROUNDS))
        old = statistics.median(sim_seconds_per_cpu_second(settings, True) for _ in range(ROUNDS))
        rows += [("%s: compiled" % label, new, "sim s / CPU s"),
                 ("  baseline: the walk in plain Python", old, "sim s / CPU s"),
                 ("  ratio", new / old, "x")]
    return rows
