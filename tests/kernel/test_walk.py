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
