"""kernel.workload: same seed same run, events without switches, calls of chosen functions."""

from __future__ import annotations

import collections
import random

import pytest
from kfiles import wr
from workload_helpers import boot, names_of, run

from fakefs import sim
from fakefs.sim import workload
from fakefs.sim.clock import ManualClock
from fakefs.kernel.walkgraph import FENTRY_RET


@pytest.fixture(scope="module")
def k():
    return boot(nr_cpus=4)


def test_same_seed_same_run():
    a, b = boot(seed=5), boot(seed=5)
    ra = [(t.pid, s) for t, s in run(a.workload, 3000, ncpu=2)]
    rb = [(t.pid, s) for t, s in run(b.workload, 3000, ncpu=2)]
    assert ra == rb
    assert [(t.pid, t.comm) for t in a.workload.tasks()] == [(t.pid, t.comm) for t in b.workload.tasks()]
    c = boot(seed=6)
    assert [(t.pid, s) for t, s in run(c.workload, 3000, ncpu=2)] != ra


def test_unknown_event_kind(k):
    with pytest.raises(ValueError):
        k.workload.stacks_for_event(random.Random(1), 0, "no_such_event")


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


def test_wakeups_without_a_path_still_do_not_switch(monkeypatch):
    k = boot(seed=1, nr_cpus=4)
    w, ks = k.workload, k.kallsyms
    monkeypatch.setattr(w.reach, "path", lambda *a, **kw: None)     # only interrupts get there
    rng = random.Random(2)
    for i in range(400):
        cpu = i % 4
        w.sample(rng, cpu)
        before = list(k.sched.curr)
        kind, site = (("sched_waking", "try_to_wake_up"), ("sched_wakeup", "ttwu_do_activate"))[i % 2]
        task, stack = w.stacks_for_event(rng, cpu, kind)
        assert list(k.sched.curr) == before and task is before[cpu]
        assert ks.sprint_symbol_no_offset(stack[0]) == site and len(stack) <= 30


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
        task, stack, entered = got
        for e in entered:        # callers of the target, entered on the way
            assert len(e) < len(stack) and stack[len(stack) - len(e) + 1:] == e[1:]
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
        out.append([(t.pid, s) for t, s, _ in (w.calls_to(rng, i % 2, ids) for i in range(200))])
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


def test_calls_aside_leave_the_cpus_alone():
    """Calls drawn on the side, of any function or of chosen ones, move no
    task and call no switch hook: the run after them is the run without."""
    a, b = boot(seed=5), boot(seed=5)
    switches = []
    a.workload.switch_hooks.append(lambda *args: switches.append(args))
    ks = a.kallsyms
    ids = a.workload.call_ids([ks.addr_of("schedule"), ks.addr_of("kernel_clone")])
    rng = random.Random(3)
    frames = a.workload.calls_aside(rng, 300)
    chosen = a.workload.calls_aside(rng, 100, ids)
    assert len(frames) == 300 and len(chosen) > 50
    assert {a.workload.wg.names[fr.fn] for fr in chosen} <= {"schedule", "kernel_clone"}
    for fr in frames + chosen:
        assert ks.lookup(fr.stack[0])[1] == FENTRY_RET       # a traced function's entry
    assert not switches
    assert [(t.pid, s) for t, s in run(a.workload, 2000, ncpu=2)] == \
        [(t.pid, s) for t, s in run(b.workload, 2000, ncpu=2)]


def test_inlined_functions_are_found_in_their_callers(k):
    wl = k.workload
    # vma_lock_alloc is inlined into vm_area_alloc / vm_area_dup in Debian's build
    assert not k.kallsyms.addr_of("vma_lock_alloc")
    outer = wl.inlined_into("vma_lock_alloc")
    assert outer and k.kallsyms.addr_of(outer)
    assert wl.inlined_into("no_such_function_anywhere") is None


def _events_on(seed=3):
    """A kernel on its machine with every event enabled (the machine forks
    tasks the walk adopts)."""
    k = sim.boot(seed=seed, nr_cpus=2, clock=ManualClock(), host_kallsyms=False)
    wr(k, "events/enable", "1")
    return k


def test_the_frame_cache_restarts_with_events_alone(monkeypatch):
    # only event_stack()/switch_path() make frames then: they restart it too
    monkeypatch.setattr(workload, "FRAME_CAP", 800)
    k = _events_on()
    w, most, restarts = k.workload, 0, 0
    for _ in range(100):                           # 2 s
        before = w.frames.count
        k.clock.advance(20_000_000)
        k.timekeeper.run_until_now()
        most = max(most, w.frames.count)
        restarts += w.frames.count < before
    assert restarts >= 2
    assert most < 800 + 100                        # + the frames of the call that went over


def test_a_restart_forgets_the_paths_adopted_tasks_went():
    # a frame a task is in keeps the frames below it, and their kids all
    # the paths made through them: unless a restart empties them, the old
    # tree stays alive beside the new one
    k = _events_on()
    w = k.workload
    k.clock.advance(4_000_000_000)
    k.timekeeper.run_until_now()
    adopted = [w.walk.states[pid] for pid in w.walk._adopted if pid in w.walk.states]
    assert sum(ts.frame is not None for ts in adopted) > 0
    w.frames.restart(w.walk.kept_frames())
    where = [ts.frame for ts in w.walk.states.values()] + [c.halt for c in w.walk.cpus]
    assert all(fr.kids == {} for f in where for fr in _chain(f))


def _chain(fr):
    while fr is not None:
        yield fr
        fr = fr.parent


@pytest.mark.parametrize("kind,site,entered", [
    ("sched_process_fork", "kernel_clone", "kernel_clone"),
    ("sched_process_exec", "bprm_execve", "do_execveat_common.isra.0"),
])
def test_code_path_takes_a_user_task_to_the_site(kind, site, entered):
    k = sim.boot(seed=2, nr_cpus=2, clock=ManualClock(), host_kallsyms=False)
    w, ks = k.workload, k.kallsyms
    shell = next(t for t in k.sched.tasks.values() if t.comm == "bash")
    w.follow(0, shell)
    stack, frames = w.code_path(random.Random(1), 0, kind)
    calls = [fr.stack for fr in frames]
    assert ks.lookup(stack[0])[0] == site
    names = [ks.lookup(st[0])[0] for st in calls]
    assert entered in names
    # each call's stack is its caller's, one frame deeper, outermost first
    assert [len(st) for st in calls] == sorted(len(st) for st in calls)
    assert w.code_path(random.Random(1), 0, "no_such_kind") == ((), ())
    # the task came back: its next fork (or exec) goes through there again
    for seed in range(5):
        _stack, again = w.code_path(random.Random(seed), 0, kind)
        assert entered in [ks.lookup(fr.stack[0])[0] for fr in again]


@pytest.mark.parametrize("profile", ["call_profile", "duration_profile"])
def test_a_profile_made_while_the_machine_drives_is_the_cpus_tasks(profile):
    """A profile is made once, on the side, whenever it is first asked
    for.  While a machine drives the walk, no task switches by itself: a
    profile made then was the calls of the one task each CPU ran at that
    moment, and a CPU running its idle task had nothing but the idle
    loop and its interrupts (lesson 7's function profiler: the vfs_*
    calls counted from the boot's call profile got no times, 0.000 us).
    Now the side run switches among the CPUs' own tasks as before the
    machine came: the profile covers what the boot-time one does."""
    k = sim.boot(seed=7, nr_cpus=2, clock=ManualClock(), host_kallsyms=False)
    wr(k, "events/sched/sched_switch/enable", "1")    # (watched: the machine runs)
    k.clock.advance(100_000_000)
    k.timekeeper.run_until_now()
    wl = k.workload
    assert wl.driven
    wl.walk.follow(1, k.sched.idle[1])          # CPU 1 runs its idle task now
    before = [(c.ts, c.ts.frame, c.ts.phase) for c in wl.walk.cpus]
    made = getattr(wl, profile)(*([500_000] if profile == "duration_profile" else []))
    assert [(c.ts, c.ts.frame, c.ts.phase) for c in wl.walk.cpus] == before
    assert wl.driven
    fresh = sim.boot(seed=7, nr_cpus=2, clock=ManualClock(), host_kallsyms=False).workload
    at_boot, _n = fresh.call_profile()
    names = wl.wg.names
    for cpu, boot_counts in enumerate(at_boot):
        got = made[0][cpu] if profile == "call_profile" else made[cpu]
        common = {i for i, n in boot_counts.items() if n >= 30}
        missing = sorted(names[i] for i in common - set(got))
        assert len(missing) <= len(common) // 20, (cpu, len(common), missing[:20])
