"""The kernel's call sites as the machine's work reaches them (alloc_calls.py):
a code path allocates at its site and schedules its objects' free from the
instant its caller gives, with what varies drawn from the caller's RNG."""

import random

from mm_helpers import boot


def test_a_lifetime_runs_from_the_instant_the_caller_gives():
    k = boot()
    calls = k.alloc_calls
    freed = []
    calls.op_time = 5_000_000_000
    calls.expire(0.25, freed.append, "obj")
    assert ("obj" in [e[3] for e in calls.heap]
            and min(e[0] for e in calls.heap if e[3] == "obj") == 5_250_000_000)
    assert freed == []                          # the caller frees what is due


def test_readahead_allocates_at_its_site_what_the_callers_rng_draws():
    k = boot()
    calls = k.alloc_calls
    tag = calls.site("readahead")
    before, queued = (tag.bytes, tag.calls), len(calls.heap)
    n = random.Random(3).choice((4, 8, 16, 32))   # the code path's first draw
    calls.readahead(random.Random(3))
    assert tag.bytes - before[0] == n * 4096 and tag.calls > before[1]
    assert len(calls.heap) > queued
    # the same draws give the same allocation again
    b2 = tag.bytes
    calls.readahead(random.Random(3))
    assert tag.bytes - b2 == n * 4096


def test_free_takes_any_handle_the_code_paths_return():
    k = boot()
    calls = k.alloc_calls
    tag = calls.site("filp")
    b0 = tag.bytes
    objs = [calls.cache_alloc("filp", "filp") for _ in range(3)]
    assert tag.bytes > b0
    called = []
    calls.free([objs, None, lambda: called.append(1)])
    assert tag.bytes == b0 and called == [1]
    proc = calls.tasks.new_process(rss=16, nvma=12)
    task = calls.site("task")
    live = task.bytes
    calls.free(proc)                            # a process: its exit
    assert task.bytes < live
