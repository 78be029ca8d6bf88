"""Reach: event stacks, the walk conditioned on getting to the event's sites."""

from __future__ import annotations

import collections
import random

import pytest
from workload_helpers import boot, graph_edges, names_of

from fakefs.sim.reach import ReachTable
from fakefs.kernel.walkgraph import F_ENTRY, FENTRY_RET
from fakefs.sim.workload import EVENT_KINDS


@pytest.fixture(scope="module")
def k():
    return boot(nr_cpus=4)


@pytest.mark.parametrize("kind", EVENT_KINDS)
def test_event_stacks_end_in_the_event_site(k, kind):
    w, ks = k.workload, k.kallsyms
    sites = {w.wg.names[f] for f in w.wg.events[kind]}
    assert sites
    rng = random.Random(9)
    counts = collections.Counter()
    for i in range(3000):
        task, stack = w.stacks_for_event(rng, i % 4, kind)
        counts[stack] += 1
        assert len(stack) <= 30
        name, off, size, _ = ks.lookup(stack[0])
        assert name in sites and FENTRY_RET < off < size
        assert all(ks.lookup(ip) for ip in stack)
    assert 10 <= len(counts) <= 2500


def test_kmem_cache_alloc_numbers_look_like_the_seed():
    # seed 004: kmem_cache_alloc, 5 s: 1177 unique stacks of 61255
    k = boot(seed=1, nr_cpus=4)
    rng = random.Random(1)
    counts = collections.Counter(k.workload.stacks_for_event(rng, i % 4, "kmem_cache_alloc")[1]
                                 for i in range(20000))
    assert 150 <= len(counts) <= 4000
    assert max(counts.values()) >= 20000 * 0.01


FREE_AND_WAKE = [
    # kind, function the tracepoint is in, callers that must show up
    ("kfree", "kfree", {"skb_free_head", "kvfree", "security_cred_free", "rcu_do_batch"}),
    ("kmem_cache_free", "kmem_cache_free", {"kfree_skbmem", "__d_free", "put_cred_rcu",
                                            "ext4_free_in_core_inode", "mempool_free_slab"}),
    ("sched_waking", "try_to_wake_up", {"wake_up_process", "default_wake_function"}),
    ("sched_wakeup", "ttwu_do_activate", {"try_to_wake_up", "sched_ttwu_pending"}),
]


@pytest.mark.parametrize("kind,site,callers", FREE_AND_WAKE)
def test_free_and_wakeup_stacks(kind, site, callers):
    k = boot(seed=1, nr_cpus=4)
    w, ks = k.workload, k.kallsyms
    edges = graph_edges(w)
    ids = w.wg.ids
    rng = random.Random(11)
    call_sites = collections.Counter()
    depths = []
    for i in range(2000):
        w.sample(rng, i % 4)
        task, stack = w.stacks_for_event(rng, i % 4, kind)
        names = names_of(ks, stack)
        assert names[0] == site
        name, off, size, _ = ks.lookup(stack[0])
        assert FENTRY_RET < off < size
        # the event's call_site (stack[1]) is in a function that calls the site
        call_sites[names[1]] += 1
        for callee, caller in zip(names, names[1:]):
            pair = (ids[caller], ids[callee])
            assert pair in edges or w.wg.flags[ids[callee]] & F_ENTRY, (caller, callee)
        depths.append(len(stack))
    assert callers <= set(call_sites), call_sites.most_common(20)
    assert max(call_sites.values()) < 0.95 * len(depths)
    depths.sort()
    assert depths[len(depths) // 2] >= 8 and depths[-1] <= 30
    assert sum(6 <= d <= 30 for d in depths) >= 0.8 * len(depths)


def test_free_stacks_come_from_syscalls_softirqs_and_kworkers():
    k = boot(seed=2, nr_cpus=4)
    w, ks = k.workload, k.kallsyms
    rng = random.Random(3)
    seen = collections.defaultdict(set)
    for i in range(3000):
        cpu = i % 4
        w.sample(rng, cpu)
        kind = ("kfree", "kmem_cache_free")[(i // 4) % 2]
        _, stack = w.stacks_for_event(rng, cpu, kind)
        names = names_of(ks, stack)
        if "rcu_do_batch" in names:
            seen[kind].add("rcu")
        if "handle_softirqs" in names:
            seen[kind].add("softirq")
        if names[-1] == "entry_SYSCALL_64_after_hwframe":
            seen[kind].add("syscall")
        if "process_one_work" in names and "handle_softirqs" not in names:
            seen[kind].add("kworker")
    for kind in ("kfree", "kmem_cache_free"):
        assert seen[kind] == {"rcu", "softirq", "syscall", "kworker"}, (kind, seen[kind])


def test_free_and_wakeup_stacks_are_deterministic():
    kinds = ("kfree", "kmem_cache_free", "sched_waking", "sched_wakeup")

    def events(seed):
        w = boot(seed=seed, nr_cpus=2).workload
        rng = random.Random(7)
        out = []
        for i in range(1200):
            if i % 3 == 0:
                w.sample(rng, i % 2)
            task, stack = w.stacks_for_event(rng, i % 2, kinds[i % 4])
            out.append((task.pid, stack))
        return out

    a = events(4)
    assert events(4) == a
    assert events(5) != a


def test_the_reach_table_holds_each_functions_callees_in_flat_arrays():
    t = ReachTable()
    t.close(0)                               # no way on from 0
    t.edge(2, 0.5)
    t.edge(3, 2.0)
    t.facts(3, 0.25)
    t.close(1)
    with pytest.raises(AssertionError):
        t.facts(1, 0.5)                      # (2 has no callee to keep them at)
    t.close(2)
    t.edge(0, 1.0)
    t.facts(1, 0.75)
    t.close(3)
    assert [t.has(f) for f in range(4)] == [False, True, False, True]
    assert list(t.callees[t.start[1]:t.start[2]]) == [2, 3]
    assert list(t.cum[t.start[1]:t.start[2]]) == [0.5, 2.0]
    assert list(t.callees[t.start[3]:t.start[4]]) == [0]
    assert [t.total(f) for f in range(4)] == [0.0, 2.0, 0.0, 1.0]
    assert [t.far_of(f) for f in range(4)] == [0, 3, 0, 1]
    assert [t.prem_of(f) for f in range(4)] == [0.0, 0.25, 0.0, 0.75]
    assert len(t.far) == len(t.prem) == len(t.callees) == 3     # alongside the callees
    with pytest.raises(AssertionError):
        t.close(1)                           # functions are filled in order


def test_cached_reach_tables_agree_with_their_callee_tables(k):
    """Every callee kept gets to a site (dist below the cut), in the graph's
    order, with positive weights adding up to the total."""
    w = k.workload
    reach = w.reach
    profile = next(iter(w.wg.tables))
    dist, rtab, _, _ = reach.tables(profile, "kmem_cache_free")
    P = reach._compute(w.wg.tables[profile], "kmem_cache_free")[2]
    assert any(rtab.prem_of(f) for f in range(len(dist)))
    for f in range(len(dist)):
        lo, hi = rtab.start[f], rtab.start[f + 1]
        if lo == hi:
            continue
        cum = list(rtab.cum[lo:hi])
        assert cum == sorted(cum) and cum[0] > 0 and cum[-1] == rtab.total(f)
        assert all(dist[g] < 99 and P[g] > 0 for g in rtab.callees[lo:hi])
        assert rtab.far_of(f) == max(dist[g] for g in rtab.callees[lo:hi])
        assert 0 <= rtab.prem_of(f) <= 1
