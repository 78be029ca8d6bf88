"""The walk: what every CPU runs, task switches."""

from __future__ import annotations

import collections
import random

import pytest
from workload_helpers import boot, run


@pytest.fixture(scope="module")
def k():
    return boot(nr_cpus=4)


def test_idle_cpus_run_the_idle_task(k):
    w, ks = k.workload, k.kallsyms
    seen = 0
    for task, stack in run(w, 4000, seed=3):
        if task.pid == 0:
            seen += 1
            assert task.comm.startswith("swapper/")
            assert ks.sprint_symbol_no_offset(stack[-1]) in ("common_startup_64",
                                                             "secondary_startup_64_no_verify")
    assert seen > 100


def test_distinct_stacks_are_skewed():
    k = boot(seed=1, nr_cpus=4)
    counts = collections.Counter(s for _, s in run(k.workload, 25466, seed=1))
    assert 300 <= len(counts) <= 9000
    top = sorted(counts.values(), reverse=True)
    head = top[:max(1, len(top) // 10)]
    assert sum(head) >= 0.5 * sum(top)       # a tenth of the stacks take half the hits
    assert k.workload.distinct_paths() > 10 * len(counts)


def test_sched_switch_switches(k):
    w = k.workload
    seen = []
    w.switch_hooks.append(lambda cpu, prev, nxt, st: seen.append((cpu, prev, nxt, st)))
    try:
        rng = random.Random(3)
        for i in range(300):
            cpu = i % 4
            prev, stack = w.stacks_for_event(rng, cpu, "sched_switch")
            assert seen[-1][:3] == (cpu, prev, w.current(cpu))
            assert seen[-1][3] is stack
            assert k.kallsyms.sprint_symbol_no_offset(stack[0]) == "__schedule"
            assert k.sched.curr[cpu] is w.current(cpu)
    finally:
        w.switch_hooks.clear()
    assert len(seen) > 100
    assert all(prev is not nxt for _, prev, nxt, _ in seen)
    assert len({nxt.pid for _, _, nxt, _ in seen}) > 5


def test_sample_is_cheap(k):
    w = k.workload
    rng = random.Random(1)
    for i in range(20000):
        w.sample(rng, i % 4)
    got = [w.sample(rng, i % 4) for i in range(5000)]
    assert all(stack for _task, stack in got)


def _calls(k, n, cpus=2, seed=5):
    """``n`` traced calls of each CPU in turn, as (task, frame) pairs."""
    rng = random.Random(seed)
    out = []
    for i in range(n // 1000):
        for task, frs in k.workload.sample_runs(rng, i % cpus, 1000):
            out.extend((task, fr) for fr in frs)
    return out


def test_a_frame_repeats_what_it_did():
    """A frame calls what it has not called before less and less often
    (walkgraph, "a frame repeats what it did"): the distinct stacks of
    300,000 calls are a fraction of those of a walk that draws every call
    afresh, and grow more slowly in the second half."""
    def distinct(novelty):
        k = boot(seed=3, nr_cpus=2)
        k.workload.walk.novelty = novelty
        seen, growth = set(), []
        for i, (_, fr) in enumerate(_calls(k, 300_000)):
            seen.add(fr.stack)
            if i in (149_999, 299_999):
                growth.append(len(seen))
        return growth
    fresh = distinct(1e18)
    kept = distinct(0.5)
    assert kept[1] < 0.5 * fresh[1]
    assert kept[1] - kept[0] < 0.75 * kept[0]     # the second half adds less than the first


def test_a_frame_keeps_the_proportions_of_what_it_calls():
    """Among the callees a busy frame calls, each is called as often as
    its table weight says (the frame's memory only leaves out callees it
    has not met)."""
    k = boot(seed=3, nr_cpus=2)
    w = k.workload
    entered = collections.Counter()
    table_of = {}        # frame -> the pick table entry its calls are drawn from
    for task, fr in _calls(k, 300_000):
        if fr.parent is not None and not fr.irq:
            entered[fr] += 1
            ts = w.walk.states.get(task.pid if task.pid else -1 - task.cpu)
            e = ts.table[fr.parent.fn]
            if table_of.setdefault(fr.parent, e) is not e:
                table_of[fr.parent] = None      # two profiles' tables call from it
    by_parent = collections.defaultdict(list)
    for fr, n in entered.items():
        by_parent[fr.parent].append((fr, n))
    checked = 0
    for parent, kids in by_parent.items():
        kids = [(fr, n) for fr, n in kids if n >= 300]
        e = table_of[parent]
        if len(kids) < 2 or e is None:
            continue
        callees, cum, _ = e
        weight = collections.Counter()
        for i, g in enumerate(callees):
            weight[g] += cum[i] - (cum[i - 1] if i else 0.0)
        if not all(weight[fr.fn] for fr, _ in kids):
            continue                    # (entered otherwise: an exception, a helper)
        wsum = sum(weight[fr.fn] for fr, _ in kids)
        nsum = sum(n for _, n in kids)
        for fr, n in kids:
            assert abs(n / nsum - weight[fr.fn] / wsum) < 0.1, (parent.fn, fr.fn)
        checked += 1
    assert checked >= 4
