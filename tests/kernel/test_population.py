"""The boot task population: every task's pid, comm, CPU, profile and weight."""

from __future__ import annotations

import hashlib

import pytest

from fakefs.kernel.init import Kernel

BOOT = [("fakefs.kernel.kallsyms", "kallsyms_init"), ("fakefs.kernel.workload", "workload_init")]


def boot(seed, nr_cpus):
    return Kernel(seed=seed, nr_cpus=nr_cpus, host_kallsyms=False).boot(initcalls=BOOT)


def rows(k):
    """(pid, tgid, comm, cpu, profile, weight, kthread, user) of every task,
    then the next pid, the CPUs' idle weights and the idle tasks' profiles."""
    w = k.workload
    out = [(t.pid, t.tgid, t.comm, t.cpu, w.profile_of(t.pid), w.states[t.pid].weight,
            t.kthread, w.states[t.pid].user) for t in w.tasks()]
    out.append(("next_pid", k.sched.next_pid, tuple(c.idle_weight for c in w._cpus),
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
