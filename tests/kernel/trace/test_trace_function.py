"""The compiled pieces of the function tracer (``_trace_function.pyx``)
against their plain-Python expressions (the entries and stack records are
held equal to one call at a time in test_trace_activity.py)."""

from __future__ import annotations

import pytest


def _traced(raw, settings, cmdline, monkeypatch, reads=False):
    """A traced machine's files, with plain calls written by the compiled
    writer into raw sub-buffers (``raw``) or as tuples."""
    from kfiles import rd, wr

    from fakefs import sim
    from fakefs.sim.files import read_file
    from fakefs.sim.clock import ManualClock
    from fakefs.sim import trace_call_writes
    monkeypatch.setattr(trace_call_writes, "RAW_WRITES", raw)
    k = sim.boot(seed=11, nr_cpus=2, clock=ManualClock(), cmdline=cmdline, host_kallsyms=False)
    for path, value in settings:
        wr(k, path, value)
    out = []
    for step in range(6):
        k.clock.advance(30_000_000)
        k.timekeeper.run_until_now()
        if reads and step % 2:
            # consuming readers between the writer's stretches: whole pages,
            # text, and what is left
            out.append(read_file(k, "sys/kernel/tracing/per_cpu/cpu1/trace_pipe_raw", 4096))
            out.append(read_file(k, "sys/kernel/tracing/per_cpu/cpu0/trace_pipe", 1 << 14))
    out += [rd(k, "trace"), rd(k, "per_cpu/cpu0/stats"), rd(k, "per_cpu/cpu1/stats"),
            rd(k, "saved_cmdlines"), rd(k, "buffer_total_size_kb")]
    if k.tracing.global_trace.stackmap is not None:
        out += [rd(k, "stack_map_stat"), rd(k, "stack_map")]
    used = [sum(p.raw is not None for p in cb.pages) for cb in k.tracing.global_trace.buffer.cpus]
    monkeypatch.undo()
    return out, used


@pytest.mark.parametrize("cmdline,settings,reads", (
    ("fakefs.fn_rate=200000", [("current_tracer", "function")], False),
    ("fakefs.fn_rate=200000", [("buffer_size_kb", "16"), ("current_tracer", "function")], True),
    ("fakefs.fn_rate=100000", [("buffer_size_kb", "32"), ("options/overwrite", "0"),
                               ("current_tracer", "function")], False),
    ("fakefs.fn_rate=200000", [("buffer_size_kb", "64"), ("current_tracer", "function"),
                               ("events/sched/enable", "1"), ("events/irq/enable", "1")], True),
    ("fakefs.fn_rate=50000", [("buffer_size_kb", "128"), ("current_tracer", "function"),
                              ("options/stacktrace", "1"), ("options/stackmap", "1")], True),
    ("fakefs.fn_rate=400000 ftrace_stackmap.bits=10",       # the map fills: drops
     [("buffer_size_kb", "128"), ("current_tracer", "function"), ("options/stacktrace", "1"),
      ("options/stackmap", "1")], False),
    ("fakefs.fn_rate=30000", [("buffer_size_kb", "64"), ("current_tracer", "function"),
                              ("options/func_stack_trace", "1")], False),
    ("fakefs.fn_rate=30000", [("current_tracer", "function"), ("options/func_stack_trace", "1"),
                              ("options/stackmap", "1"), ("events/sched/enable", "1")], True),
    # stacks in full (written from the frames) into raw and tuple sub-buffers
    ("fakefs.fn_rate=30000", [("buffer_size_kb", "64"), ("current_tracer", "function"),
                              ("options/stacktrace", "1"), ("events/sched/enable", "1"),
                              ("events/irq/enable", "1")], True),
))
def test_the_compiled_writer_writes_what_the_tuples_path_writes(cmdline, settings, reads, monkeypatch):
    """Byte for byte the same files (trace, stats, trace_pipe_raw pages,
    trace_pipe, saved comms) whether plain function calls go through the
    compiled writer or as tuples (``write_entries``, whose entries go into
    the same raw sub-buffers an entry at a time): with the buffer
    wrapping, without overwrite (dropped entries), with events between
    the calls (tuple and raw sub-buffers mixed), with consuming readers,
    with the calls' stacks through the stackmap (its files too) or in full."""
    raw, used = _traced(True, settings, cmdline, monkeypatch, reads)
    tuples, used_too = _traced(False, settings, cmdline, monkeypatch, reads)
    if "bits=10" in cmdline:
        assert int(raw[-2].split("drops:")[1].split()[0]) > 100, raw[-2]     # stack_map_stat
    assert any(used) and any(used_too)
    assert raw[6 if reads else 0].count("\n") > 300        # the trace
    assert raw == tuples


def _reset_between(raw, monkeypatch):
    """Calls with stacks through the stackmap, the map reset (tracing off a
    moment), calls again: the files after each part."""
    from kfiles import wr

    from fakefs import sim
    from fakefs.sim.clock import ManualClock
    from fakefs.sim import trace_call_writes
    monkeypatch.setattr(trace_call_writes, "RAW_WRITES", raw)
    k = sim.boot(seed=5, nr_cpus=2, clock=ManualClock(), cmdline="fakefs.fn_rate=50000",
                 host_kallsyms=False)
    for path, value in (("buffer_size_kb", "64"), ("current_tracer", "function"),
                        ("options/stacktrace", "1"), ("options/stackmap", "1")):
        wr(k, path, value)
    out = _parts_with_resets(k, 3, 20_000_000, ("stack_map_stat", "stack_map", "trace"))
    monkeypatch.undo()
    return out


def _parts_with_resets(k, steps, step_ns, files, between=lambda part: None):
    """Three parts of ``steps`` catch-ups ``step_ns`` apart, ``files`` read
    after each, then the stackmap reset (tracing off a moment) and
    ``between(part)``: the files read."""
    from kfiles import rd, wr
    out = []
    for part in range(3):
        for _ in range(steps):
            k.clock.advance(step_ns)
            k.timekeeper.run_until_now()
        out += [rd(k, f) for f in files]
        wr(k, "tracing_on", "0")
        wr(k, "stack_map", "0")
        wr(k, "tracing_on", "1")
        between(part)
    return out


def test_a_stackmap_reset_between_stretches_forgets_the_frames_slots(monkeypatch):
    """A frame remembers its stack's slot (``StackIds.of_frame``); after a
    reset of the map the slots are claimed again from nothing, byte for
    byte as the tuples path (which asks the map each time) does."""
    raw = _reset_between(True, monkeypatch)
    assert raw == _reset_between(False, monkeypatch)
    assert raw[1].count("\n") > 5 and raw[4] != raw[1]


def _calls_by_window(kept, monkeypatch):
    """The function tracer with events between its calls (many stretches a
    window) and stacks through the stackmap, with a stackmap reset and a
    filter change between windows: the files, with the compiled writers
    kept for a window (``kept``) or made for each stretch."""
    from kfiles import wr

    from fakefs import sim
    from fakefs.sim.clock import ManualClock
    from fakefs.sim import trace_activity
    if not kept:
        fresh = trace_activity.TraceActivity._writer_for

        def each_stretch(self, trs, wl, cpu):
            self._call_writers = None
            return fresh(self, trs, wl, cpu)
        monkeypatch.setattr(trace_activity.TraceActivity, "_writer_for", each_stretch)
    k = sim.boot(seed=9, nr_cpus=2, clock=ManualClock(), cmdline="fakefs.fn_rate=60000",
                 host_kallsyms=False)
    for path, value in (("buffer_size_kb", "96"), ("current_tracer", "function"),
                        ("events/sched/enable", "1"), ("events/kmem/enable", "1"),
                        ("options/stacktrace", "1"), ("options/stackmap", "1")):
        wr(k, path, value)
    out = _parts_with_resets(k, 4, 15_000_000, ("stack_map_stat", "trace", "per_cpu/cpu1/stats"),
                             lambda part: wr(k, "options/stacktrace", "1" if part % 2 else "0"))
    monkeypatch.undo()
    return out


def test_a_writer_kept_for_a_window_writes_what_one_per_stretch_writes(monkeypatch):
    """``TraceActivity._writer_for`` keeps a ``CallWriter`` per CPU and
    array for a window: it takes the task state and the stackmap as they
    are at each stretch, so the files are those of a writer made for every
    stretch (the calls' entries, their stacks' ids, the map's counts)."""
    from fakefs.sim import trace_call_writes
    made = []
    real = trace_call_writes.CallWriter

    def counted(*args):
        made.append(args[3])
        return real(*args)
    monkeypatch.setattr(trace_call_writes, "CallWriter", counted)
    kept = _calls_by_window(True, monkeypatch)
    kept_made = len(made)
    monkeypatch.setattr(trace_call_writes, "CallWriter", counted)
    fresh = _calls_by_window(False, monkeypatch)
    assert len(made) - kept_made > 2 * kept_made        # (stretches: several a window)
    assert kept[1].count("<stack_id") > 100
    assert kept == fresh
