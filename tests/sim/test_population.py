"""The boot task population: every task's pid, comm, CPU, profile and weight."""

from __future__ import annotations

import hashlib
import random
import tomllib

import pytest

from fakefs.kernel.callgraph import load_callgraph
from fakefs.kernel.init import Kernel
from fakefs.sim.population import fill_comm, load_tasks, parse_tasks, spawn_boot_tasks
from fakefs.kernel.sched import Scheduler
from fakefs.timeline import bound_cpu
from fakefs import sim
from fakefs.sim.clock import ManualClock

BOOT = [("fakefs.kernel.kallsyms", "kallsyms_init"), ("fakefs.sim.workload", "workload_init")]


def boot(seed, nr_cpus):
    return sim.keep_time(Kernel(seed=seed, nr_cpus=nr_cpus, clock=ManualClock(), host_kallsyms=False).boot(initcalls=BOOT))


def rows(k):
    """(pid, tgid, comm, cpu, profile, weight, kthread, user) of every task,
    then the next pid, the CPUs' idle weights and the idle tasks' profiles."""
    w = k.workload
    out = [(t.pid, t.tgid, t.comm, t.cpu, w.profile_of(t.pid), w.walk.states[t.pid].weight,
            t.kthread, w.walk.states[t.pid].user) for t in w.tasks()]
    out.append(("next_pid", k.sched.next_pid, tuple(c.idle_weight for c in w.walk.cpus),
                tuple(w.profile_of(-1 - c) for c in range(k.nr_cpus))))
    return out


def digest(r):
    return hashlib.sha256(repr(r).encode()).hexdigest()[:16]


# (seed, nr_cpus): (rows, digest of the rows), as the task table written as
# code gave them before it became data
EXPECTED = {
    (1, 1): (72, "76e4b6cdc3d9b6fd"), (1, 2): (81, "7a622f103d32976c"),
    (1, 4): (101, "489d7daa6efe51c3"), (1, 8): (137, "1f0816e693ae39f5"),
    (2, 1): (72, "6cba1e03a338e331"), (2, 2): (81, "ea8f94ae1d8ed850"),
    (2, 4): (101, "76bcbca5c4bced87"), (2, 8): (137, "8be59ece0e078a7b"),
    (3, 1): (72, "9784945a0b46fd4b"), (3, 2): (81, "9a5de45288b97846"),
    (3, 4): (101, "31f36f2cc6e09e26"), (3, 8): (137, "f925f2081265e00d"),
}

# some of seed 1, 2 CPUs in full, to see what differs when a digest does
SOME_OF_1_2 = [
    (1, 1, "systemd", 0, "sleeper", 0.3, False, True),
    (2, 2, "kthreadd", 0, "kthreadd", 0.05, True, False),
    (3, 3, "pool_workqueue_", 0, "kthread:kthread_worker_fn", 0.02, True, False),
    (6, 6, "kworker/R-slub_", 1, "kthread:rescuer_thread", 0.01, True, False),
    (10, 10, "kworker/u4:0", 0, "kworker_unbound", 0.6, True, False),
    (22, 22, "cpuhp/1", 1, "cpuhp", 0.01, True, False),
    (26, 26, "kworker/1:0", 1, "kworker", 1.0, True, False),
    (33, 33, "khungtaskd", 1, "khungtaskd", 0.05, True, False),
    (53, 53, "kworker/1:1H", 1, "kworker_highpri", 0.4, True, False),
    (97, 97, "kworker/u4:1", 1, "kworker_unbound", 0.5, True, False),
    (140, 140, "jbd2/vda1-8", 1, "jbd2", 0.3, True, False),
    (228, 228, "systemd-journal", 0, "journald", 0.4, False, True),
    (521, 521, "sshd", 1, "sshd", 0.05, False, True),
    (995, 995, "nginx", 1, "sleeper", 0.05, False, True),
    (997, 997, "nginx", 0, "webserver", 0.8, False, True),
    (998, 998, "python3", 0, "worker", 0.4, False, True),
    (999, 998, "python3", 1, "worker", 0.4, False, True),
    (1000, 998, "python3", 0, "worker", 0.4, False, True),
    (2702, 2702, "bash", 1, "shell", 0.5, False, True),
    (2888, 2888, "cc1", 1, "compiler", 1.5, False, True),
    ("next_pid", 2889, (4.739999999999999, 4.187499999999998), ("idle0", "idle")),
]


@pytest.mark.parametrize("seed,nr_cpus", sorted(EXPECTED))
def test_boot_tasks_are_the_same_as_ever(seed, nr_cpus):
    r = rows(boot(seed, nr_cpus))
    if (seed, nr_cpus) == (1, 2):
        for row in SOME_OF_1_2:
            assert row in r, row
    assert (len(r), digest(r)) == EXPECTED[(seed, nr_cpus)]


def test_tasks():
    k = boot(1, 4)
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
    # the per-CPU kernel threads are bound to their CPU, nothing else is
    assert sum(t.bound for t in tasks) >= 4 * 4
    for t in tasks:
        cpu = bound_cpu(t.comm)
        assert t.bound == (cpu is not None), (t.comm, t.bound)
        assert cpu is None or t.cpu == cpu


def test_the_table_names_profiles_of_the_graph():
    table = load_tasks()
    profiles = load_callgraph().profiles
    for name in table.profiles():
        assert name.split(":", 1)[0] in profiles, name


def test_comm_patterns():
    assert fill_comm("kworker/u{2ncpu}:{n}", 4, n=2) == "kworker/u8:2"
    assert fill_comm("ksoftirqd/{cpu}", 4, cpu=3) == "ksoftirqd/3"
    with pytest.raises(ValueError):
        fill_comm("kworker/{cpu}:0", 4)          # no CPU outside a per-CPU step
    with pytest.raises(ValueError):
        fill_comm("x{nr}", 4)


TABLE = """
gap_pids = [1, 2]
[idle]
profile_cpu0 = "idle0"
profile = "idle"
weight_min = 0.5
weight_per_task_weight = 0.5

[[boot]]
tasks = [{ comm = "init", pid = 1, user = true, profile = "sleeper", weight = 0.3, cpu = 0 }]

[[boot]]
per_cpu = "secondary"
tasks = [{ comm = "k/{cpu}", profile = "kworker", weight = 1.0, cpu = "each", bound = true }]

[[boot]]
skip = [10, 0]
repeat = "nr_cpus"
repeat_max = 2
defaults = { user = true, profile = "worker", weight = 0.4 }
tasks = [{ comm = "w{n}", threads = 1 }]
"""


def spawned(text, nr_cpus=3):
    sched = Scheduler(nr_cpus)
    out = []
    spawn_boot_tasks(parse_tasks(tomllib.loads(text)), sched, random.Random(1),
                     lambda t, prof, w, user: out.append((t.pid, t.tgid, t.comm, prof, w, user, t.kthread)))
    return sched, out


def test_spawning_a_table():
    sched, out = spawned(TABLE)
    assert [o[:3] for o in out] == [(1, 1, "init"), (2, 2, "k/1"), (3, 3, "k/2"),
                                    (14, 14, "w1"), (15, 14, "w1"), (16, 16, "w2"), (17, 16, "w2")]
    assert [sched.tasks[p].cpu for p in (1, 2, 3)] == [0, 1, 2]
    assert [sched.tasks[p].bound for p in (1, 2, 3, 14)] == [False, True, True, False]
    assert out[0][3:] == ("sleeper", 0.3, True, False)
    assert out[1][3:] == ("kworker", 1.0, False, True)
    assert out[3][3:] == ("worker", 0.4, True, False)


@pytest.mark.parametrize("change,error", [
    (("weight = 0.3", "wieght = 0.3"), "unknown keys wieght"),
    (('cpu = "each"', 'cpu = "every"'), "cpu is"),
    (('per_cpu = "secondary"', 'per_cpu = "some"'), "per_cpu is"),
    (('per_cpu = "secondary"\n', ''), "outside a per_cpu step"),
    (("skip = [10, 0]", "skip = [10]"), "expected"),
    (('profile = "idle"\n', ''), "profile missing"),
    (('cpu = "each", bound = true', 'bound = true'), "bound is"),
    (('bound = true', 'bound = 1'), "bound is"),
])
def test_table_errors(change, error):
    text = TABLE.replace(*change)
    assert text != TABLE
    with pytest.raises(ValueError, match=error):
        parse_tasks(tomllib.loads(text))
