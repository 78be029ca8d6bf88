"""The compiled hooks of the function graph tracer (_trace_functions_graph.pyx)
write what their specification (trace_functions_graph_reference.py) writes:
the same trace, byte for byte, and the same counts, under every setting
they read."""

import random

import pytest

from fakefs import sim
from fakefs.kernel.init import Kernel
from fakefs.sim.clock import ManualClock
from fakefs.kernel.trace import _trace_functions_graph as compiled
from fakefs.kernel.fs.pseudo import WouldBlock
from fakefs.sim.files import read_file
from fakefs.kernel.trace import trace_functions_graph, trace_init
from fakefs.kernel.trace.fgraph_retval import KINDS, retval_of
from fakefs.kernel.trace.trace_functions_graph_reference import GraphTracerReference
from kfiles import rd, wr

MS = 1_000_000
GRAPH = {"CONFIG_FUNCTION_GRAPH_TRACER": True, "CONFIG_FUNCTION_GRAPH_RETVAL": True}


def traced(settings, reference: bool, monkeypatch, ms: int = 12):
    """What the function_graph array (instance ``g`` if made, else the top
    level) shows after ``ms`` of a machine with ``settings`` written (path,
    value), with the compiled hooks or the reference's: its ``trace``,
    every CPU's stats and ``trace_pipe_raw`` pages (the records' bytes),
    and the top level's ``trace``; and the type of its tracer."""
    if reference:                        # (and its records as tuples)
        monkeypatch.setattr(trace_init, "GraphTracer", GraphTracerReference)
        monkeypatch.setattr(trace_functions_graph, "RAW_WRITES", False)
    clock = ManualClock()
    k = Kernel(seed=13, nr_cpus=2, clock=clock, host_kallsyms=False, config_overrides=GRAPH)
    k.host_tasks = True                  # (set_ftrace_pid)
    sim.boot_kernel(k)
    sim.attach(k)
    for path, value in settings:
        if path == "mkdir":
            k.tracing.instance_mkdir(value)
        else:
            wr(k, path, value + "\n")
    for _ in range(ms):
        clock.advance(MS)
        k.timekeeper.run_until_now()
    inst = "instances/g/" if "g" in k.tracing.instances else ""
    out = {"top trace": rd(k, "trace"), "trace": rd(k, inst + "trace")}
    for cpu in range(2):
        out["stats %d" % cpu] = rd(k, inst + "per_cpu/cpu%d/stats" % cpu)
        try:
            out["raw %d" % cpu] = read_file(k, "sys/kernel/tracing/%sper_cpu/cpu%d/trace_pipe_raw" % (inst, cpu))
        except WouldBlock:
            out["raw %d" % cpu] = b""
    monkeypatch.undo()
    tr = k.tracing.instances["g"] if inst else k.tracing.global_trace
    return out, type(tr.current)


GRAPH_TRACER = (("current_tracer", "function_graph"),)
SETTINGS = {
    "plain": GRAPH_TRACER,
    "retval, proc, abstime": (("options/funcgraph-retval", "1"), ("options/funcgraph-proc", "1"),
                              ("options/funcgraph-abstime", "1")) + GRAPH_TRACER,
    "graph function and notrace": (("set_graph_function", "sched_tick"),
                                   ("set_graph_function", "ttwu_do_activate"),
                                   ("set_graph_notrace", "update_load_avg"))
    + GRAPH_TRACER,
    "notrace only": (("set_graph_notrace", "task_tick_fair"),) + GRAPH_TRACER,
    "depth": (("max_graph_depth", "3"),) + GRAPH_TRACER,
    "no irqs": (("options/funcgraph-irqs", "0"),) + GRAPH_TRACER,
    "sleep-time off": (("options/sleep-time", "0"),) + GRAPH_TRACER,
    "thresh": (("tracing_thresh", "2"),) + GRAPH_TRACER,
    "filter": (("set_ftrace_filter", "*sched* *lock*"),) + GRAPH_TRACER,
    "notrace filter": (("set_ftrace_notrace", "*rcu*"),) + GRAPH_TRACER,
    "pid list": (("set_ftrace_pid", "733 2611 8"),) + GRAPH_TRACER,
    "no pids": (("set_ftrace_notrace_pid", "0"),) + GRAPH_TRACER,
    "no overwrite": (("buffer_size_kb", "16"), ("options/overwrite", "0")) + GRAPH_TRACER,
    "an instance beside the function tracer": (
        ("mkdir", "g"), ("instances/g/current_tracer", "function_graph"),
        ("current_tracer", "function")),
}


@pytest.mark.parametrize("name", sorted(SETTINGS))
def test_the_compiled_hooks_write_what_the_reference_writes(name, monkeypatch):
    settings = SETTINGS[name]
    got, kind = traced(settings, False, monkeypatch)
    want, ref_kind = traced(settings, True, monkeypatch)
    assert kind.__name__ == "GraphTracer" and ref_kind is GraphTracerReference
    lines = [ln for ln in got["trace"].splitlines() if not ln.startswith("#")]
    assert len(lines) > 200 and any(got["raw %d" % c] for c in range(2)), got["trace"][:2000]
    assert got == want


def test_the_compiled_return_values_are_the_specifications():
    rng = random.Random(5)
    for _ in range(20000):
        kind = rng.choice(KINDS)
        func = 0xffffffff81000000 + rng.randrange(1 << 24)
        calltime = rng.randrange(1 << 40)
        rax = rng.randrange(1 << 64)
        assert compiled.retval(KINDS.index(kind), func, calltime, rax) == \
            retval_of(kind, func, calltime, rax), (kind, func, calltime, rax)


def test_a_stretch_cut_short_still_counts_what_it_wrote():
    """A stretch whose end() never came (an exception on the way): the next
    begin() stores what the raw writer wrote (the CPU buffer's counts)."""
    from fakefs.kernel.trace.trace_context import CALL_CONTEXT
    clock = ManualClock()
    k = Kernel(seed=13, nr_cpus=2, clock=clock, host_kallsyms=False, config_overrides=GRAPH)
    sim.boot_kernel(k)
    sim.attach(k)
    wr(k, "current_tracer", "function_graph\n")
    clock.advance(2 * MS)
    k.timekeeper.run_until_now()
    tr = k.tracing.global_trace
    cur, cb = tr.current, tr.buffer.cpus[0]
    walk, c = k.workload.stretch(0)
    runs = walk.run_many(c, k.trace_activity.rng, 300)
    times = [k.sim_time + 100 * i for i in range(300)]
    cur.begin(tr)
    cur.take(tr, 0, runs, times, walk.states, c.idle, CALL_CONTEXT)
    entries, written = cb.entries, cb.written    # (the tail's are still the writer's)
    cur.begin(tr)                                # the next stretch
    assert cb.written > written and cb.entries > entries
    cur.end(tr, 0)
