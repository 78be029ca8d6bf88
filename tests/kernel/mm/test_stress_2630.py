"""The simulated board and its workloads, driving the 2.6.30 allocator."""

from __future__ import annotations

import random

import pytest

from fakefs.kernel.mm.stress_2630 import SCENARIOS, MemorySystem

HZ = 250


def board(seed=1, mem=128 << 20, log=None):
    ms = MemorySystem(mem, nr_cpus=2, hz=HZ, rng=random.Random(seed),
                      printk=(lambda text, level=6: log.append(text)) if log is not None else None)
    ms.boot()
    return ms


def read_and_clear(ms):
    c = list(ms.pa.heap_alloc_count)
    ms.pa.heap_alloc_count[:] = [0] * 6
    return c


def check_conservation(ms):
    """Every page of RAM is free or owned by exactly one thing."""
    seen = set()
    n = 0
    for it in (ms.pa.free_blocks(), ms.owned_pages()):
        for pfn, order in it:
            for p in range(pfn, pfn + (1 << order)):
                assert p not in seen, "page %#x twice" % p
                seen.add(p)
                n += 1
    assert n == ms.pa.totalram_pages


def test_boot_allocations_are_level1():
    ms = board()
    c = read_and_clear(ms)
    assert c[0] > 5000 and c[1:] == [0] * 5
    assert ms.init.pid == 1 and ms.init.comm == "init"
    check_conservation(ms)


def test_idle_board_stays_at_level1():
    ms = board()
    read_and_clear(ms)
    free0 = ms.pa.nr_free_pages()
    ms.run_jiffies(10 * HZ)
    c = read_and_clear(ms)
    assert 300 < c[0] < 3000 and c[1:] == [0] * 5
    assert abs(ms.pa.nr_free_pages() - free0) < 500
    assert not ms.vm.kswapd_awake and ms.oom.nr_kills == 0


def test_pagecache_fill_wakes_kswapd():
    ms = board()
    ms.set_scenario("pagecache")
    ms.run_jiffies(5 * HZ)
    assert ms.vm.nr_file > 20000
    read_and_clear(ms)
    ms.run_jiffies(3 * HZ)
    c = read_and_clear(ms)
    assert c[0] > c[1] > 0                      # kswapd keeps up, mostly
    assert c[4] == c[5] == 0 and ms.vm.kswapd_wakeups > 0
    check_conservation(ms)


def test_memhog_ends_in_oom_kill_and_restarts():
    log = []
    ms = board(log=log)
    ms.set_scenario("memhog")
    ms.run_jiffies(15 * HZ)
    assert ms.oom.nr_kills >= 1
    assert any(line.startswith("Out of memory: kill process ") and "(memhog)" in line for line in log)
    assert any(line.startswith("Killed process ") for line in log)
    ms.run_jiffies(2 * HZ)
    assert "memhog" in ms.procs and ms.procs["memhog"].pid != ms.oom.init_task.pid
    check_conservation(ms)


def test_stress_reaches_the_deep_levels():
    ms = board(seed=1)
    ms.set_scenario("stress")
    total = [0] * 6
    for _ in range(40):
        ms.run_jiffies(HZ)
        for i, v in enumerate(read_and_clear(ms)):
            total[i] += v
    assert total[0] > total[1] > total[3] > 0
    assert total[2] > 0                          # reclaimers living on the reserves
    assert total[5] > 0                          # failures (atomic, order-2 receive buffers)
    assert 0 < ms.packets_dropped <= total[5]
    check_conservation(ms)


def test_parallel_oom_kill_level_is_rare_but_happens():
    """Over 45 s of stress (this seed) every level is reached; level 5, a
    task catching memory freed by an OOM victim, only a few times."""
    ms = board(seed=2)
    ms.set_scenario("stress")
    ms.run_jiffies(45 * HZ)
    c = ms.pa.heap_alloc_count
    assert all(c), c
    assert c[4] < c[2] < c[3] < c[1] < c[0]


def test_back_to_idle_after_stress():
    ms = board()
    ms.set_scenario("stress")
    ms.run_jiffies(20 * HZ)
    ms.set_scenario("idle")
    ms.run_jiffies(3 * HZ)
    read_and_clear(ms)
    ms.run_jiffies(5 * HZ)
    c = read_and_clear(ms)
    assert c[2:] == [0, 0, 0, 0]
    assert not ms.procs
    check_conservation(ms)


def test_same_seed_same_counts():
    a, b = board(seed=7), board(seed=7)
    for ms in (a, b):
        ms.set_scenario("stress")
        ms.run_jiffies(12 * HZ)
    assert a.pa.heap_alloc_count == b.pa.heap_alloc_count
    assert a.pa.nr_free_pages() == b.pa.nr_free_pages()


def test_unknown_scenario():
    ms = board()
    with pytest.raises(ValueError):
        ms.set_scenario("fork-bomb")
    assert set(SCENARIOS) >= {"idle", "pagecache", "writer", "memhog", "netstorm", "stress"}


def test_skip_shifts_timers_and_counts_background():
    ms = board()
    ms.set_scenario("memhog")
    ms.run_jiffies(HZ)
    read_and_clear(ms)
    j = ms.pa.jiffies
    ms.skip_jiffies(60 * HZ)
    assert ms.pa.jiffies == j + 60 * HZ
    c = read_and_clear(ms)
    assert c[0] > 0 and c[1:] == [0] * 5
    ms.run_jiffies(HZ)
    check_conservation(ms)


def test_step_cost_under_stress():
    """A 20 ms step (5 jiffies) of the heaviest workload stays cheap."""
    ms = board()
    ms.set_scenario("stress")
    ms.run_jiffies(8 * HZ)                       # memory full, reclaim busy
    ms.run_jiffies(5 * HZ)
    check_conservation(ms)
