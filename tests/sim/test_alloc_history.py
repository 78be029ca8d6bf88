"""What the machine's running system allocates and how long it keeps it
(sim/alloc_history.py): an operation allocates at its site what the
workload's RNG draws, and schedules each object's free from the instant of
the operation under way."""

import random

from mm_helpers import boot

from fakefs.sim import alloc_history
from fakefs.sim.alloc_history import Lifetimes


def test_a_lifetime_runs_from_the_instant_of_the_operation():
    life = Lifetimes()
    freed = []
    life.op_time = 5_000_000_000
    life.expire(0.25, freed.append, "obj")
    life.expire(0.5, freed.append, "later")
    assert freed == []                          # the workload frees what is due
    assert [(t, o) for t, _fn, o in life.due(5_400_000_000)] == [(5_250_000_000, "obj")]
    assert [o for _t, _fn, o in life.due(6 * 10**9)] == ["later"] and not life.heap


def test_readahead_allocates_at_its_site_what_the_rng_draws():
    k = boot()
    calls, life = k.alloc_calls, k.alloc_workload.life
    tag = calls.site("readahead")
    before, queued = (tag.bytes, tag.calls), len(life.heap)
    n = random.Random(3).choice((4, 8, 16, 32))   # the operation's first draw
    alloc_history.readahead(calls, life, random.Random(3))
    assert tag.bytes - before[0] == n * 4096 and tag.calls > before[1]
    assert len(life.heap) > queued
    # the same draws give the same allocation again
    b2 = tag.bytes
    alloc_history.readahead(calls, life, random.Random(3))
    assert tag.bytes - b2 == n * 4096


def test_boot_leaves_the_steady_state_the_machine_reaches():
    """The machine's part of boot (``alloc_steady_init``) fills the pools:
    the page cache, dentries, processes, their frees due later."""
    k = boot()
    life = k.alloc_workload.life
    assert len(life.heap) > 1000 and life.op_time == 0
    assert k.alloc_calls.site("readahead").bytes > 0 and k.alloc_calls.site("dentry").bytes > 0
