"""CallSites: the ways up from an allocation's call site (the rest is in
test_reach.py and mm/test_kmem_trace.py)."""

from __future__ import annotations

from workload_helpers import boot

from fakefs import sim
from fakefs.kernel import fork
from fakefs.sim import call_sites
from fakefs.sim.call_sites import CallerTable
from fakefs.sim.files import read_file, write_file
from fakefs.sim.clock import ManualClock
from fakefs.kernel.walkgraph import table_items

TRACING = "sys/kernel/tracing/"


def callers_by_dict(tables) -> dict:
    """The reverse of the pick tables as a dict of lists (what CallerTable
    stands for): callee -> [(caller, weight), ...] in table order."""
    rev: dict = {}
    for caller, table in enumerate(tables):
        for callee, w in zip(*table_items(table)):
            if callee >= 0 and w > 0:
                rev.setdefault(callee, []).append((caller, w))
    return rev


def test_a_caller_table_gives_each_function_s_callers_as_the_dict_would():
    wg = boot(nr_cpus=2).workload.wg
    for tables in (wg.base_table, *wg.tables.values()):         # (made in C: _reach.caller_arrays)
        rev, table = callers_by_dict(tables), CallerTable(tables)
        assert rev and len(table.caller) == sum(map(len, rev.values()))
        for f in range(len(tables)):
            assert table.get(f, ()) == rev.get(f, ()), f
        assert table.get(-1, None) is None and table.get(len(tables), None) is None


def test_a_caller_table_keeps_a_caller_s_repeated_calls_in_order():
    # two functions call 2 (1 twice: its table lists 2 twice); 3 calls nobody
    tables = [([1, 2], [1.0, 3.0], None), ([2, 0, 2], [0.5, 1.0, 3.0], None), None,
              ([-1], [1.0], None)]
    table = CallerTable(tables)
    assert table.get(2) == [(0, 2.0), (1, 0.5), (1, 2.0)]
    assert table.get(0) == [(1, 0.5)] and table.get(1) == [(0, 1.0)]
    assert table.get(3, ()) == ()


def traced_allocations(monkeypatch, looked_at: int):
    """A machine's kmem_cache_alloc events with their stacks for 30
    simulated seconds, its shell's commands gone from the task table 8
    exits after their own, CallSites looking at its oldest task with ways
    past ``looked_at`` of them: (the kernel, the trace)."""
    monkeypatch.setattr(fork, "DEAD_KEPT", 8)
    monkeypatch.setattr(call_sites, "WAY_PIDS_LOOKED_AT", looked_at)
    k = sim.boot(seed=4, nr_cpus=2, clock=ManualClock(), host_kallsyms=False)
    for path in ("events/kmem/kmem_cache_alloc/enable", "options/stacktrace"):
        write_file(k, TRACING + path, b"1")
    write_file(k, TRACING + "buffer_size_kb", b"4096")
    for _ in range(300):
        k.clock.advance(100_000_000)
        k.timekeeper.run_until_now()
    return k, read_file(k, TRACING + "trace")


def test_the_ways_of_a_task_gone_from_the_task_table_are_forgotten(monkeypatch):
    """An exited task allocates no more: once it left the task table, its
    ways up from call sites go (they were kept until WAYS_KEPT, ~600 bytes
    each); those of the tasks still there stay, and the stacks drawn are
    those of a CallSites that forgets nothing."""
    k, got = traced_allocations(monkeypatch, 4)
    every, want = traced_allocations(monkeypatch, 10 ** 9)
    assert got == want and got.count(b"kmem_cache_alloc:") > 1000
    cs, kept = k.workload.call_sites, every.workload.call_sites
    tasks = k.sched.tasks
    assert len(kept._ways) > len(cs._ways)              # the exited commands' ways went
    gone = [pid for pid in cs._ways if pid not in tasks]
    assert len(gone) * 2 <= len(cs._ways) - len(gone) + 4   # (WAY_LOOKS: about half)
    assert all(cs._ways[pid] == kept._ways[pid] for pid in cs._ways)
    assert cs._nways == sum(map(len, cs._ways.values()))


def test_ways_are_kept_a_dict_a_task_and_counted(monkeypatch):
    """The bookkeeping: a task's ways in its dict, the oldest task looked at
    once WAY_PIDS_LOOKED_AT have ways (forgotten if gone from the task
    table, else looked at again later), the count of ways that restarts
    the memo at WAYS_KEPT."""
    k = boot()
    cs = k.workload.call_sites
    monkeypatch.setattr(call_sites, "WAY_PIDS_LOOKED_AT", 3)
    live = [pid for pid in k.sched.tasks if pid][:6]
    gone = [max(k.sched.tasks) + 1 + i for i in range(200)]      # never in the table
    for i, pid in enumerate(live + gone):
        cs._keep_way(pid, ("f", False), i)
        cs._keep_way(pid, ("f", False), -i)              # (the same key again)
        cs._keep_way(pid, ("g", True), i)
    assert all(cs._ways[pid] == {("f", False): -i, ("g", True): i}
               for i, pid in enumerate(live))
    # (WAY_LOOKS 3: the gone ones about half as many as the live ones)
    assert len([pid for pid in cs._ways if pid in gone]) <= len(live)
    assert cs._nways == 2 * len(cs._ways)
    monkeypatch.setattr(call_sites, "WAYS_KEPT", cs._nways - 1)
    cs._keep_way(gone[-1] + 1, ("f", False), 0)
    assert cs._ways == {gone[-1] + 1: {("f", False): 0}} and cs._nways == 1


def leads_by_search(cs, name, reach, task_only, visiting) -> bool:
    """What CallSites._leads stands for, searched afresh: a way up from
    ``name`` through its source callers (none twice) meets a graph function
    in ``reach``, through no interrupt's entry if ``task_only``."""
    fid = cs.wg.ids.get(name)
    if fid is not None:
        return fid in reach
    if task_only and name in call_sites.INTERRUPT_FUNCS:
        return False
    visiting = visiting | {name}
    return any(leads_by_search(cs, c, reach, task_only, visiting)
               for c in cs.sources.callers(name) if c not in visiting)


def test_what_a_task_reaches_through_the_source_callers_is_what_a_search_finds():
    k = sim.boot(seed=4, nr_cpus=2, clock=ManualClock(), host_kallsyms=False)
    cs = k.workload.call_sites
    names = sorted({cs._name(kd.site) for kd in k.driver.allocs.aw.op_kinds() if kd.site} - {None})
    groups = {(ts.profile, id(ts.roots)): ts for ts in k.workload.walk.states.values()}
    assert len(names) > 20 and len(groups) > 10
    yes = no = 0
    for ts in groups.values():
        for profile in (ts.profile, None):
            for task_only in (True, False):
                key, reach = cs._reach_of(profile, ts.roots, task_only)
                for name in names:
                    want = leads_by_search(cs, name, reach, task_only, frozenset())
                    assert cs._leads(name, key, reach) == want, (ts.profile, profile, name)
                    yes, no = yes + want, no + (not want)
    assert yes and no                       # (both answers come up)
