"""The registered events: the 6.12 catalogue served as events/ (eventfs-like)."""

from __future__ import annotations

import os

import pytest

from fakefs import sim
from fakefs.kernel.fs.pseudo import File
from fakefs.sim.clock import ManualClock
from fakefs.sim import rated_events
from fakefs.kernel.trace.event_catalog import load_catalog

T = "sys/kernel/tracing/"


@pytest.fixture(scope="module")
def k():
    return sim.boot(host_kallsyms=False, clock=ManualClock(), nr_cpus=2)


def rd(k, path):
    n = k.tree.root.walk(T + path)
    assert n is not None, path
    f = File(n, os.O_RDONLY)
    n.fops.open(f)
    return n.fops.read(f, 0, 1 << 30).decode()


def wr(k, path, data):
    n = k.tree.root.walk(T + path)
    f = File(n, os.O_WRONLY | os.O_TRUNC)
    n.fops.open(f)
    return n.fops.write(f, data.encode())


def test_a_stock_machines_catalogue(k):
    lines = rd(k, "available_events").splitlines()
    assert len(lines) >= 2000 and len(set(lines)) == len(lines)
    assert len({ln.split(":")[0] for ln in lines}) >= 90
    ids = [ev.id for ev in k.tracing.events]
    assert len(set(ids)) == len(ids) and min(ids) == 21      # after the stackmap's entry type
    # the listing: modules loaded at boot come first, newest first, then vmlinux
    cat = load_catalog()
    assert lines == ["%s:%s" % key for key in cat.listing_order(cat.default_modules)]


def test_formats_are_the_catalogues(k):
    cat = load_catalog()
    for system, name in (("sched", "sched_switch"), ("kmem", "kmalloc"),
                         ("irq", "irq_handler_entry"), ("syscalls", "sys_enter_openat")):
        ev = next(e for e in k.tracing.events if (e.system, e.name) == (system, name))
        text = rd(k, "events/%s/%s/format" % (system, name))
        assert text == cat.event(system, name).format_text(ev.id)
        assert rd(k, "events/%s/%s/id" % (system, name)) == "%d\n" % ev.id


def test_every_events_field_lines_are_its_fields(k):
    """Equal fields share one format line (``_from_catalogue``): each event's
    lines are still its own fields' lines, in order."""
    for ev in k.tracing.events:
        assert ev.desc is not None
        assert ev.fields == [f.format_line() for f in ev.desc.fields]


def test_eventfs_fills_directories_on_first_look():
    k = sim.boot(host_kallsyms=False, clock=ManualClock(), nr_cpus=1)
    before = len(k.tree.nodes)
    assert before < 2000                                   # not 2,500 events x 4 files
    sd = k.tree.root.walk(T + "events/irq")
    hinted = sd.nr_subdirs()
    assert hinted == len([c for c in sd.children.values() if c.is_dir]) == sd.nr_subdirs()
    assert sorted(k.tree.root.walk(T + "events/irq/softirq_entry").children) == [
        "enable", "filter", "format", "hist", "id", "trigger"]
    assert len(k.tree.nodes) > before


def test_a_silent_event_can_be_enabled_and_filtered(k):
    wr(k, "events/irq/irq_handler_entry/enable", "1")
    assert rd(k, "events/irq/irq_handler_entry/enable") == "1\n"
    assert "irq:irq_handler_entry" in rd(k, "set_event").splitlines()
    wr(k, "events/irq/irq_handler_entry/filter", "irq == 1")
    assert rd(k, "events/irq/irq_handler_entry/filter") == "irq == 1\n"
    wr(k, "events/irq/irq_handler_entry/filter", "0")
    wr(k, "events/irq/irq_handler_entry/enable", "0")
    assert "irq:irq_handler_entry" not in rd(k, "set_event").splitlines()


def test_every_event_on_records_only_what_fires():
    """With every event on, the buffer holds the events of the tracepoints
    the machine's code paths fired (the system calls' through sys_enter and
    sys_exit), and of those with a rate of their own: none is made up for
    the others, which are most of the 2,449.  What fired is seen by a probe
    of the test's own on each tracepoint the events probe (one without a
    probe is not fired: its code path tests that first)."""
    fired = set()
    k = sim.boot(host_kallsyms=False, clock=ManualClock(), nr_cpus=2)
    wr(k, "events/enable", "1")
    assert rd(k, "events/enable") == "1\n"
    for tp in k.tracepoints:
        if tp.probes:
            tp.register(lambda *_args, name=tp.name: fired.add(name))
    k.clock.advance(100_000_000)
    k.timekeeper.run_until_now()
    by_id = {ev.id: ev for ev in k.tracing.events}
    ids = {e[1] for cb in k.tracing.global_trace.buffer.cpus for e in cb.iter_events()}
    recorded = [by_id[i] for i in ids if i in by_id]
    assert len(recorded) > 20 and len(recorded) < len(k.tracing.events) // 10
    for ev in recorded:                     # (a system call's: sys_enter or sys_exit)
        assert ev.tracepoint in fired or rated_events.rate(ev), (ev.system, ev.name)


def test_available_events_is_top_level_only():
    """6.12 creates it once, for the top-level trace array (event_trace_init)."""
    k = sim.boot(host_kallsyms=False, clock=ManualClock(), nr_cpus=1)
    k.tracing.instance_mkdir("foo")
    assert k.tree.root.walk(T + "available_events") is not None
    inst = k.tree.root.walk(T + "instances/foo")
    assert "available_events" not in inst.children and "set_event" in inst.children


def test_events_ftrace_holds_every_entry_type(k):
    """trace_entries.h, as 6.12 registers it, plus the series' stack_id."""
    d = k.tree.root.walk(T + "events/ftrace")
    cat = load_catalog()
    want = {ev.name for ev in cat.events if ev.system == "ftrace"} | {"stack_id"}
    assert set(d.children) == want and len(want) >= 19
    # every event directory has ``hist`` (CONFIG_HIST_TRIGGERS)
    assert sorted(d.children["function"].children) == ["format", "hist", "id"]
    assert sorted(d.children["print"].children) == ["format", "hist", "id", "trigger"]
    assert sorted(d.children["kernel_stack"].children) == ["format", "hist"]
    fmt = rd(k, "events/ftrace/func_repeats/format")
    assert fmt == cat.event("ftrace", "func_repeats").format_text(
        cat.event("ftrace", "func_repeats").fixed_id)
    assert rd(k, "events/ftrace/function/id") == "1\n"


def test_an_instance_lists_module_events_after_the_kernels():
    """Module events are prepended to the top-level array's ``tr->events``
    as modules load; an instance made later adds them in ftrace_events'
    order, so its set_event shows them after vmlinux's."""
    k = sim.boot(host_kallsyms=False, clock=ManualClock(), nr_cpus=1)
    first = k.tracing.events_listing[0]
    assert first.desc.module, "the default modules register events"
    k.tracing.instance_mkdir("foo")
    for top in ("", "instances/foo/"):
        for ev in ("sched:sched_switch", "%s:%s" % (first.system, first.name)):
            n = k.tree.root.walk(T + top + "set_event")
            f = File(n, os.O_WRONLY | os.O_APPEND)
            n.fops.open(f)
            n.fops.write(f, ev.encode())
    mod = "%s:%s\n" % (first.system, first.name)
    assert rd(k, "set_event") == mod + "sched:sched_switch\n"
    assert rd(k, "instances/foo/set_event") == "sched:sched_switch\n" + mod
