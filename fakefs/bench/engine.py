"""How fast the simulated machine runs: simulated seconds per CPU second.

In-process, manual clock, 2 simulated CPUs, seed 3, default rates; the
machine caught up 10 ms at a time for ``SPAN_NS``, with the daemon's policy
for Python's cycle collector (``fuse/heap.py``: what boot made is frozen,
young collections every GC_THRESHOLD[0] allocations, each stretch frozen
when it ends; with the default thresholds full collections of the model's
objects take a fifth of the time, which the daemon never pays).  Each configuration runs
with the compiled data plane (docs/data-plane.md) and, as the baseline from
the same run, with the walk and the function graph tracer's hooks in plain
Python (``walk_reference``, ``trace_functions_graph_reference``: the old
path).  Real time is 1.0: above it the machine runs faster than the time it
simulates.  ``python -m fakefs.bench engine``.
"""

from __future__ import annotations

import contextlib
import gc
import statistics
import time

from ..fuse.heap import GC_THRESHOLD
from ..kernel.trace import trace_functions_graph, trace_init
from ..kernel.trace.trace_functions_graph_reference import GraphTracerReference
from ..sim.walk_reference import use_reference

T = "sys/kernel/tracing/"
# a second: sustained tracing, past the first new stacks of a frame tree that
# repeats itself (~7,000 a busy second: walkgraph); a shorter span would be
# mostly warm-up
SPAN_NS = 1_000_000_000
STEP_NS = 10_000_000
# rounds of each configuration, the compiled one and its baseline taken
# in turn (the host's speed drifts within a run: both see the same drift)
ROUNDS = 5
CONFIGS = (
    ("function tracer", (("current_tracer", "function"),)),
    ("every event", (("events/enable", "1"),)),
    ("function + stacktrace + stackmap + every event",
     (("current_tracer", "function"), ("events/enable", "1"),
      ("options/stacktrace", "1"), ("options/stackmap", "1"))),
    ("sched_switch only", (("events/sched/sched_switch/enable", "1"),)),
    ("function_graph", (("current_tracer", "function_graph"),)),
)


def sim_seconds_per_cpu_second(settings, reference: bool = False) -> float:
    """One run: ``SPAN_NS`` of the machine with ``settings`` written."""
    return SPAN_NS / 1e9 / traced_span(settings, reference)[1]


def traced_span(settings, reference: bool = False):
    """(the kernel, CPU seconds) of ``SPAN_NS`` of a machine booted with
    ``settings`` written (pairs of a tracefs path and a value), after a
    first step, under the daemon's collector policy."""
    from .. import sim
    from ..sim.files import write_file
    from ..sim.clock import ManualClock
    with old_path() if reference else contextlib.nullcontext():
        k = sim.boot(seed=3, nr_cpus=2, clock=ManualClock(), host_kallsyms=False)
        for path, value in settings:
            write_file(k, T + path, value.encode())
        k.clock.advance(STEP_NS)
        k.timekeeper.run_until_now()
        with daemon_collector():
            t0 = time.process_time()
            for _ in range(SPAN_NS // STEP_NS):
                k.clock.advance(STEP_NS)
                k.timekeeper.run_until_now()
                gc.freeze()                  # the end of a stretch of requests
            return k, time.process_time() - t0


@contextlib.contextmanager
def old_path():
    """Meanwhile the walk steps in plain Python and the kernels booted have
    the graph tracer's hooks in plain Python, writing tuples."""
    was = trace_init.GraphTracer, trace_functions_graph.RAW_WRITES
    trace_init.GraphTracer, trace_functions_graph.RAW_WRITES = GraphTracerReference, False
    try:
        with use_reference():
            yield
    finally:
        trace_init.GraphTracer, trace_functions_graph.RAW_WRITES = was


@contextlib.contextmanager
def daemon_collector():
    """The daemon's cycle-collector policy (``Heap.take_over_collector``)
    for the time of the block."""
    was = gc.get_threshold()
    gc.collect()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLD)
    try:
        yield
    finally:
        gc.set_threshold(*was)
        gc.unfreeze()


def host_speed() -> float:
    """CPU seconds of 10 M additions in a CPython loop: how fast this host
    is now (one VM's figures here moved 35 % within a session), printed
    before and after the configurations so that theirs can be read
    against it."""
    t0 = time.process_time()
    s = 0
    for i in range(10_000_000):
        s += i
    return time.process_time() - t0


def bench_engine() -> list[tuple[str, float, str]]:
    rows = [("host: 10 M CPython additions, before", host_speed(), "CPU s")]
    for label, settings in CONFIGS:
        news, olds = [], []
        for _ in range(ROUNDS):
            news.append(sim_seconds_per_cpu_second(settings))
            olds.append(sim_seconds_per_cpu_second(settings, True))
        new, old = statistics.median(news), statistics.median(olds)
        rows += [("%s: compiled" % label, new, "sim s / CPU s"),
                 ("  baseline: the walk (and graph hooks) in plain Python", old, "sim s / CPU s"),
                 ("  ratio", new / old, "x")]
    rows.append(("host: 10 M CPython additions, after", host_speed(), "CPU s"))
    return rows
