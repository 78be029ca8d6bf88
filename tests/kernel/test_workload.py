"""The call-stack workload: tasks, deterministic realistic stacks, events."""

from __future__ import annotations

import collections
import random
import time

import pytest

from fakefs.kernel.init import Kernel
from fakefs.kernel.kallsyms import Kallsyms
from fakefs.kernel.workload import (EVENT_KINDS, FENTRY_IP, FENTRY_RET, CallGraph,
                                    Workload, load_callgraph)

BOOT = [("fakefs.kernel.kallsyms", "kallsyms_init"), ("fakefs.kernel.workload", "workload_init")]


def boot(seed=1, nr_cpus=2, host=False):
    return Kernel(seed=seed, nr_cpus=nr_cpus, host_kallsyms=host).boot(initcalls=BOOT)


@pytest.fixture(scope="module")
def k():
    return boot(nr_cpus=4)


def run(w, n, seed=1, ncpu=4):
    rng = random.Random(seed)
    return [w.sample(rng, i % ncpu) for i in range(n)]


def graph_edges(w):
    """Every (caller, callee) pair any task may call."""
    edges = set()
    for table in list(w._tables.values()) + [w._base_table]:
        for f, e in enumerate(table):
            if e is not None:
                edges.update((f, g) for g in e[0] if g >= 0)
    return edges


def test_same_seed_same_run():
    a, b = boot(seed=5), boot(seed=5)
    ra = [(t.pid, s) for t, s in run(a.workload, 3000, ncpu=2)]
    rb = [(t.pid, s) for t, s in run(b.workload, 3000, ncpu=2)]
    assert ra == rb
    assert [(t.pid, t.comm) for t in a.workload.tasks()] == [(t.pid, t.comm) for t in b.workload.tasks()]
    c = boot(seed=6)
    assert [(t.pid, s) for t, s in run(c.workload, 3000, ncpu=2)] != ra


def test_tasks(k):
    tasks = k.workload.tasks()
    pids = [t.pid for t in tasks]
    assert len(pids) == len(set(pids))
    by = {t.pid: t for t in tasks}
    assert by[1].comm == "systemd" and not by[1].kthread
    assert by[2].comm == "kthreadd" and by[2].kthread
    comms = {t.comm for t in tasks}
    for cpu in range(4):
        assert "ksoftirqd/%d" % cpu in comms
        assert "migration/%d" % cpu in comms
        assert "kworker/%d:0" % cpu in comms
    assert {"rcu_preempt", "sshd", "bash", "systemd-journal"} <= comms
    assert all(len(t.comm) <= 15 for t in tasks)
    assert all(k.sched.tasks[t.pid] is t for t in tasks)
    assert [t.comm for t in k.sched.idle] == ["swapper/%d" % c for c in range(4)]


def test_depth_and_resolution(k):
    w, ks = k.workload, k.kallsyms
    edges = graph_edges(w)
    ids = w._ids
    depths = collections.Counter()
    for task, stack in run(w, 6000, seed=2):
        assert isinstance(stack, tuple)
        depths[len(stack)] += 1
        assert 2 <= len(stack) <= 30
        names = []
        for ip in stack:
            hit = ks.lookup(ip)
            assert hit is not None, hex(ip)
            name, off, size, _ = hit
            assert 0 < off < size
            names.append(name)
        # stack[0] is the traced function, just after its __fentry__ call
        f0 = ids[names[0]]
        assert w.flags[f0] & 1, names[0]
        assert stack[0] == w.addr[f0] + FENTRY_RET
        assert w.function_ip(stack) == w.addr[f0] + FENTRY_IP
        # each frame called the one above it (or was interrupted there)
        for callee, caller in zip(names, names[1:]):
            pair = (ids[caller], ids[callee])
            assert pair in edges or w.flags[ids[callee]] & 16, (caller, callee)
    within = sum(n for d, n in depths.items() if 10 <= d <= 30)
    assert within >= 0.8 * sum(depths.values())


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


def test_identical_paths_are_one_object(k):
    first = {}
    for _, stack in run(k.workload, 5000, seed=4):
        prev = first.setdefault(stack, stack)
        assert prev is stack


def test_distinct_stacks_are_skewed():
    k = boot(seed=1, nr_cpus=4)
    counts = collections.Counter(s for _, s in run(k.workload, 25466, seed=1))
    assert 300 <= len(counts) <= 9000
    top = sorted(counts.values(), reverse=True)
    head = top[:max(1, len(top) // 10)]
    assert sum(head) >= 0.5 * sum(top)       # a tenth of the stacks take half the hits
    assert k.workload.distinct_paths() > 10 * len(counts)


@pytest.mark.parametrize("kind", EVENT_KINDS)
def test_event_stacks_end_in_the_event_site(k, kind):
    w, ks = k.workload, k.kallsyms
    sites = {w.names[f] for f in w.events[kind]}
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


def test_unknown_event_kind(k):
    with pytest.raises(ValueError):
        k.workload.stacks_for_event(random.Random(1), 0, "no_such_event")


def test_sample_is_cheap(k):
    w = k.workload
    rng = random.Random(1)
    for i in range(20000):
        w.sample(rng, i % 4)
    t = time.perf_counter()
    for i in range(50000):
        w.sample(rng, i % 4)
    rate = 50000 / (time.perf_counter() - t)
    assert rate > 40_000        # ~400k/s on an idle machine; CI cores are shared


def test_bundled_and_host_tables_both_work():
    k = boot(seed=1, nr_cpus=2, host=True)
    w = k.workload
    assert w.events["kmem_cache_alloc"] and w.events["sched_switch"]
    for task, stack in run(w, 2000, ncpu=2):
        assert all(k.kallsyms.lookup(ip) for ip in stack)
    bundled = boot(seed=1, nr_cpus=2, host=False)
    assert bundled.kallsyms.source == "bundled"
    for task, stack in run(bundled.workload, 2000, ncpu=2):
        assert all(bundled.kallsyms.lookup(ip) for ip in stack)


def test_callgraph_file_parses():
    g = load_callgraph()
    assert g.calls["entry_SYSCALL_64_after_hwframe"] == [("do_syscall_64", 1.0)]
    assert set(g.events) == set(EVENT_KINDS)
    assert "idle" in g.profiles and g.profiles["idle"]["roots"]


def test_missing_functions_are_spliced_out():
    core = [(0x1000 + 0x100 * i, "T", n) for i, n in
            enumerate(["_stext", "entry", "a", "c", "d", "leaf", "idle_loop", "halt", "sw", "_etext"])]
    text = """
%param sharpen 1
%notrace entry
%loop idle_loop
%halt halt
%switch sw
%irq entry
%event kmalloc leaf
entry: a
a: gone*3 d
gone: c
c: leaf
d: leaf sw
idle_loop: halt sw*0.1
%profile idle
%root idle_loop
%end
%profile idle0
%root idle_loop
%end
%profile user
%root entry
%end
"""
    kern = Kernel(seed=1, nr_cpus=1, host_kallsyms=False)
    kern.kallsyms = Kallsyms(core)
    kern.sched.spawn("init", pid=1)

    class Tiny(Workload):
        def _spawn_tasks(self):
            from fakefs.kernel.workload import _Cpu
            idle = self._state(kern.sched.idle[0], "idle0", 0.0, False)
            self._cpus = [_Cpu(0, idle)]
            self._add(kern.sched.tasks[1], "user", 1.0, True)

    w = Tiny(kern, CallGraph.parse(text))
    assert "gone" in w.missing
    a, c = w._ids["a"], w._ids["c"]
    callees = w._base_table[a][0]
    assert c in callees and w._ids["d"] in callees
    rng = random.Random(1)
    names = {kern.kallsyms.sprint_symbol_no_offset(s[0]) for _, s in
             (w.sample(rng, 0) for _ in range(500))}
    assert "gone" not in names and {"a", "c", "leaf"} <= names
    task, stack = w.stacks_for_event(rng, 0, "kmalloc")
    assert kern.kallsyms.sprint_symbol_no_offset(stack[0]) == "leaf"


# ------------------------------------------------ frees and wakeups
FREE_AND_WAKE = [
    # kind, function the tracepoint is in, callers that must show up
    ("kfree", "kfree", {"skb_free_head", "kvfree", "security_cred_free", "rcu_do_batch"}),
    ("kmem_cache_free", "kmem_cache_free", {"kfree_skbmem", "__d_free", "put_cred_rcu",
                                            "ext4_free_in_core_inode", "mempool_free_slab"}),
    ("sched_waking", "try_to_wake_up", {"wake_up_process", "default_wake_function"}),
    ("sched_wakeup", "ttwu_do_activate", {"try_to_wake_up", "sched_ttwu_pending"}),
]


def names_of(ks, stack):
    return [ks.sprint_symbol_no_offset(ip) for ip in stack]


@pytest.mark.parametrize("kind,site,callers", FREE_AND_WAKE)
def test_free_and_wakeup_stacks(kind, site, callers):
    k = boot(seed=1, nr_cpus=4)
    w, ks = k.workload, k.kallsyms
    edges = graph_edges(w)
    ids = w._ids
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
            assert pair in edges or w.flags[ids[callee]] & 16, (caller, callee)
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


def test_wakeups_do_not_switch():
    k = boot(seed=3, nr_cpus=4)
    w, ks = k.workload, k.kallsyms
    switches = []
    w.switch_hooks.append(lambda *a: switches.append(a))
    rng = random.Random(5)
    bottoms = collections.Counter()
    for i in range(3000):
        cpu = i % 4
        if i % 4 == 0:
            w.stacks_for_event(rng, cpu, "sched_switch")    # tasks do get switched
        if i % 7 == 0:
            w.sample(rng, cpu)
        kind = ("sched_waking", "sched_wakeup")[(i // 4) % 2]
        before = list(k.sched.curr)
        n = len(switches)
        task, stack = w.stacks_for_event(rng, cpu, kind)
        assert len(switches) == n
        assert list(k.sched.curr) == before
        assert task is before[cpu] and w.current(cpu) is task
        names = names_of(ks, stack)
        irq = next((f for f in names if f.startswith("asm_")), None)
        bottoms[(kind, irq or names[-1])] += 1
    w.switch_hooks.clear()
    # from timer / device interrupts, IPIs, the idle loop, syscalls, kworkers
    for kind in ("sched_waking", "sched_wakeup"):
        for where in ("asm_sysvec_apic_timer_interrupt", "asm_common_interrupt",
                      "entry_SYSCALL_64_after_hwframe", "ret_from_fork_asm"):
            assert bottoms[(kind, where)] > 0, (kind, where, bottoms)
    assert bottoms[("sched_wakeup", "asm_sysvec_call_function_single")] > 0   # ttwu IPI
    assert bottoms[("sched_wakeup", "common_startup_64")] > 0     # idle: wakelist flush


def test_wakeups_without_a_path_still_do_not_switch():
    k = boot(seed=1, nr_cpus=4)
    w, ks = k.workload, k.kallsyms
    w._event_path = lambda *a, **kw: None       # only interrupts get there
    rng = random.Random(2)
    for i in range(400):
        cpu = i % 4
        w.sample(rng, cpu)
        before = list(k.sched.curr)
        kind, site = (("sched_waking", "try_to_wake_up"), ("sched_wakeup", "ttwu_do_activate"))[i % 2]
        task, stack = w.stacks_for_event(rng, cpu, kind)
        assert list(k.sched.curr) == before and task is before[cpu]
        assert ks.sprint_symbol_no_offset(stack[0]) == site and len(stack) <= 30


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


def test_calls_to_reaches_the_targets(k):
    w = k.workload
    ks = k.kallsyms
    ids = w.call_ids([ks.addr_of("schedule"), ks.addr_of("kernel_clone")])
    assert len(ids) == 2
    rng = random.Random(4)
    hits = collections.Counter()
    for i in range(400):
        got = w.calls_to(rng, i % 4, ids)
        assert got is not None
        task, stack = got
        name, off, _size, _mod = ks.lookup(stack[0])
        assert name in ("schedule", "kernel_clone") and off == FENTRY_RET
        assert w.current(i % 4) is task
        hits[name] += 1
    assert hits["schedule"] > hits["kernel_clone"]
    assert w.calls_to(rng, 0, frozenset()) is None
    # only traced functions of the graph can be called
    assert not w.call_ids([ks.addr_of("__schedule"), 12345])


def test_calls_to_is_deterministic():
    a, b = boot(seed=3), boot(seed=3)
    out = []
    for w in (a.workload, b.workload):
        ids = w.call_ids([w.kernel.kallsyms.addr_of("schedule")])
        rng = random.Random(9)
        out.append([(t.pid, s) for t, s in (w.calls_to(rng, i % 2, ids) for i in range(200))])
    assert out[0] == out[1]


def test_call_profile_leaves_the_cpus_alone():
    a, b = boot(seed=5), boot(seed=5)
    switches = []
    a.workload.switch_hooks.append(lambda *args: switches.append(args))
    counts, n = a.workload.call_profile(2000)
    assert n == 2000 and len(counts) == 2 and sum(counts[0].values()) == 2000
    assert a.workload.call_profile() is a.workload.call_profile()     # done once
    assert not switches
    assert [(t.pid, s) for t, s in run(a.workload, 2000, ncpu=2)] == \
        [(t.pid, s) for t, s in run(b.workload, 2000, ncpu=2)]
