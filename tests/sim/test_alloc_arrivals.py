"""The allocation workload's operations as the machine's events while the
allocators are traced (fakefs/sim/alloc_arrivals.py)."""

from __future__ import annotations

import collections
import math
import os

import pytest

from kfiles import rd, wr

from fakefs import sim
from fakefs.kernel.mm.kmem_trace import kernel_gfp
from fakefs.kernel.mm.page_alloc import GFP_KERNEL
from fakefs.sim.alloc_arrivals import SHARE_FOLD_NS, SHARE_TAU_NS, Shares
from fakefs.sim.alloc_workload import OWED_MAX_NS, OWED_STEP_NS
from fakefs.sim.clock import ManualClock

MS = 1_000_000


def _kernel(seed=5):
    k = sim.boot(seed=seed, nr_cpus=2, clock=ManualClock(), host_kallsyms=False)
    return k


def _run(k, ms: int, step_ms: int = 20) -> None:
    for _ in range(ms // step_ms):
        k.clock.advance(step_ms * MS)
        k.timekeeper.run_until_now()


def _fired(k, name="kmem_cache_alloc"):
    """Each firing of tracepoint ``name``: (cpu, ts, the CPU's machine
    clock then, the task running there, its burst's (start, end)) as the
    machine fires it."""
    m = k.driver
    out = []

    def probe(cpu, ts, pid, flags, pc, args):
        task = k.sched.curr[cpu]
        r = m.runs.get(task.pid)
        out.append((cpu, ts, m.clock[cpu], task, r and (r.since, r.since + r.left), args))

    k.tracepoints.get(name).register(probe)
    return out


def test_each_kind_is_made_at_its_rate():
    k = _kernel()
    wr(k, "events/kmem/kfree/enable", "1")
    _run(k, 20)
    arr = k.alloc_workload.arrivals
    assert arr.live
    made = collections.Counter()
    for i, kind in enumerate(arr.kinds):
        kind.do = (lambda f, i: lambda: (made.__setitem__(i, made[i] + 1), f()))(kind.do, i)
    _run(k, 10_000)
    want = sum(kind.rate for kind in arr.kinds) * 10
    got = sum(made.values())
    assert abs(got - want) < 5 * math.sqrt(want), (got, want)
    for i, kind in enumerate(arr.kinds):
        if kind.rate * 10 > 1000:          # packets, path lookups: within 6 sigma
            assert abs(made[i] - kind.rate * 10) < 6 * math.sqrt(kind.rate * 10), kind.rate


def test_an_allocation_happens_at_its_instant_in_a_running_task_that_gets_to_its_site():
    """The tracepoint fires when the machine is at that instant on that
    CPU (nothing placed there after the step), in the task running there,
    inside its burst, one that can call the allocator from that site."""
    k = _kernel()
    fired = _fired(k)
    wr(k, "events/kmem/kmem_cache_alloc/enable", "1")
    _run(k, 400)
    wl = k.workload
    assert len(fired) > 500
    getname = k.alloc_workload.calls.trace.call_site(k.alloc_workload.calls.site("getname"))
    last = {}
    names = 0
    for cpu, ts, clock, task, r, args in fired:
        assert ts == clock and ts >= last.get(cpu, 0)
        last[cpu] = ts
        if args[4] & kernel_gfp(GFP_KERNEL) == kernel_gfp(GFP_KERNEL) and r is not None and task.pid:
            assert r[0] <= ts < r[1]
            if args[0] == getname:
                names += 1
                assert wl.reaches(task.pid, getname)
                assert wl.walk.states[task.pid].user
    assert names > 200


def test_frees_happen_when_due_never_before():
    """What is due happens at its instant on a CPU, or when that CPU got
    there (a due event waits for its CPU): never before, and in order."""
    k = _kernel()
    aw = k.alloc_workload
    wr(k, "events/kmem/kmem_cache_free/enable", "1")
    _run(k, 20)
    arr, m, trace = aw.arrivals, k.driver, aw.calls.trace
    seen = []

    def watched(fn, when):
        def free(obj):
            cpu, ts = trace.when
            seen.append((when + arr.shift, cpu, ts, m.clock[cpu]))
            fn(obj)
        return free

    heap = aw.life.heap         # (the objects held now: same keys, the heap holds)
    held = list(heap)
    heap.clear()
    for when, seq, fn, obj in held:
        heap.push_entry((when, seq, watched(fn, when), obj))
    _run(k, 300)
    assert len(seen) > 50
    last = {}
    for due, cpu, ts, clock in seen:
        assert due <= ts == clock and ts >= last.get(cpu, 0)
        last[cpu] = ts
    late = sorted(ts - due for due, _cpu, ts, _clock in seen)
    assert late[len(late) // 2] < 100_000          # mostly at once (the median under 0.1 ms)


def test_an_arrival_is_void_unless_its_task_runs_there_in_that_stint():
    """An arrival carries (pid, the stint's start): once its task was
    switched out (or another runs there, or its burst is over) it makes
    nothing; for the stint running now it makes one operation and queues
    the next."""
    k = _kernel()
    wr(k, "events/kmem/kmalloc/enable", "1")
    _run(k, 20)
    arr, m = k.alloc_workload.arrivals, k.driver
    made = []
    for kind in arr.kinds:
        kind.do = (lambda f: lambda: (made.append(1), f()))(kind.do)
    while True:
        cpu = next((c for c in range(2) if k.sched.curr[c].pid and m.runs.get(k.sched.curr[c].pid)),
                   None)
        if cpu is not None:
            break
        _run(k, 1, 1)
    r = m.runs[k.sched.curr[cpu].pid]
    t = max(m.clock[cpu], r.since)
    assert t < r.since + r.left
    queued = len(m.heap)
    arr.fire(t, cpu, (r.task.pid, r.since - 1))              # an earlier stint
    arr.fire(t, cpu, (r.task.pid + 1, r.since))              # another task's
    arr.fire(r.since + r.left, cpu, (r.task.pid, r.since))   # after its burst
    assert made == [] and len(m.heap) == queued
    arr.fire(t, cpu, (r.task.pid, r.since))
    assert made == [1] and len(m.heap) > queued              # and the next is queued


def test_the_workload_clock_runs_with_the_machine_while_live_and_owes_after():
    k = _kernel()
    aw = k.alloc_workload
    _run(k, 300)
    assert aw.owed == 300 * MS
    wr(k, "events/kmem/kfree/enable", "1")
    _run(k, 500)
    assert aw.owed == 0 and aw.arrivals.live
    assert aw.now == k.sim_time - aw.arrivals.shift
    now = aw.now
    wr(k, "events/kmem/kfree/enable", "0")
    _run(k, 200)
    assert not aw.arrivals.live and aw.owed == 200 * MS and aw.now == now
    assert "kfree: call_site=" in rd(k, "trace")


def test_same_seed_same_trace():
    out = []
    for _ in range(2):
        k = _kernel(seed=9)
        wr(k, "events/kmem/enable", "1")
        _run(k, 200)
        out.append(rd(k, "trace"))
    assert out[0] == out[1] and out[0].count("kmem_cache_alloc:") > 100


# --- the shares' estimate ----------------------------------------------------

def test_shares_prior_is_the_tasks_long_run_share_scaled_to_the_cpus():
    s = Shares(2)
    kinds = {1: [0], 2: [0, 1], 3: [1]}
    s.prior([(1, 0.5), (2, 0.25), (3, 1.0)], kinds.__getitem__, 4)
    assert s.value == [0.75, 1.25]
    s.prior([(1, 1.0), (2, 1.0), (3, 2.0)], kinds.__getitem__, 2)      # 4 wanted, 2 CPUs
    assert s.value == [1.0, 1.5]


def test_shares_fold_the_measured_busy_time_as_a_moving_average():
    s = Shares(2)
    s.value = [1.0, 0.0]
    groups = {"a": [0], "b": [0, 1]}
    step = SHARE_FOLD_NS // 2
    assert not s.add({"a": step}, groups.__getitem__, step)   # not yet folded
    assert s.add({"b": step}, groups.__getitem__, step)
    a = SHARE_FOLD_NS / SHARE_TAU_NS
    # kind 0 had a CPU busy all along (1.0), kind 1 half the time
    assert s.value[0] == pytest.approx(1.0)
    assert s.value[1] == pytest.approx(a * 0.5)
    for _ in range(1000):                # long enough: the measured share
        s.add({"b": step // 2}, groups.__getitem__, step)
    assert s.value == pytest.approx([0.5, 0.5], abs=1e-3)


def _owing_then_traced():
    """A kernel left untraced for 3 s (owing its allocations' time), then
    kmem_cache_alloc enabled."""
    k = _kernel()
    _run(k, 3000, step_ms=1000)
    wr(k, "events/kmem/kmem_cache_alloc/enable", "1")
    return k


def test_once_traced_what_the_allocators_owe_is_a_debt_paid_a_slice_at_a_time():
    """``Timekeeper.pay_debt`` (the writer of the setting pays it): a slice
    of OWED_STEP_NS each, the machine's time unmoved; then nothing is owed
    and the step runs live."""
    k = _owing_then_traced()
    aw, tk = k.alloc_workload, k.timekeeper
    owed, t = aw.owed, k.sim_time
    assert owed > 2 * OWED_STEP_NS and not k.driver.allocs.live
    slices = 0
    while tk.pay_debt():
        assert k.sim_time == t
        slices += 1
    assert slices == math.ceil(min(owed, OWED_MAX_NS) / OWED_STEP_NS) and aw.owed == 0
    _run(k, 20)
    assert k.sim_time > t and k.driver.allocs.live


def test_a_debt_paid_in_slices_or_at_once_by_the_first_traced_step_the_same_operations():
    got = []
    for slices in (True, False):
        k = _owing_then_traced()
        while slices and k.timekeeper.pay_debt():
            pass
        _run(k, 100)
        got.append((rd(k, "trace"), rd(k, "proc/allocinfo", base="")))
    assert got[0] == got[1] and got[0][0].count("kmem_cache_alloc:") > 50


def test_allocinfo_read_after_its_owed_time_paid_in_slices_is_the_read_at_once():
    got = []
    for slices in (True, False):
        k = _kernel()
        _run(k, 3000, step_ms=1000)
        n = 0
        while slices and k.alloc_tag.settle.pay_slice():
            n += 1
        if slices:          # (the last slice says nothing remains)
            assert n + 1 == math.ceil(OWED_MAX_NS / OWED_STEP_NS) and k.alloc_workload.owed == 0
        got.append(rd(k, "proc/allocinfo", base=""))
    assert got[0] == got[1]


def test_dev_kmsg_owes_the_allocations_time_and_pays_it_in_slices_as_allocinfo_does():
    """/dev/kmsg's reader settles the allocation workload first (it may
    warn in the log): ``DevKmsgOps.owed`` is the log's ``Settle``, whose
    slices pay the owed time OWED_STEP_NS at a time; the log and
    /proc/allocinfo then read as after paying it at once."""
    from fakefs.kernel.fs.pseudo import File, WouldBlock

    got = []
    for slices in (True, False):
        k = _kernel()
        _run(k, 3000, step_ms=1000)
        node = k.tree.root.children["dev"].children["kmsg"]
        f = File(node, os.O_RDONLY)
        node.fops.open(f)
        # (each read settles, at any offset; /proc/allocinfo's at 0, where its text is made)
        assert node.fops.owed(f, 0) is node.fops.owed(f, 300) is k.log.settle
        ai = k.alloc_tag.allocinfo
        assert ai.fops.owed(f, 0) is k.alloc_tag.settle and ai.fops.owed(f, 300) is None
        owed = k.alloc_workload.owed
        n = 0
        while slices and k.log.settle.pay_slice():
            n += 1
        if slices:
            assert n + 1 == math.ceil(min(owed, OWED_MAX_NS) / OWED_STEP_NS)
            assert k.alloc_workload.owed == 0
        records = []
        off = 0
        while True:
            try:
                records.append(node.fops.read(f, off, 8192))
            except WouldBlock:              # (the end of the log)
                break
            off += len(records[-1])
        got.append((records, rd(k, "proc/allocinfo", base="")))
    assert got[0] == got[1] and got[0][0]
