"""CPU hotplug on the simulated machine (Machine.cpu_down/cpu_up, kernel/cpu.py):
an offline CPU runs nothing and writes nothing; its tasks run elsewhere."""

from __future__ import annotations

import hashlib
import re

from fakefs import sim
from fakefs.sim.files import read_file, write_file
from fakefs.sim.clock import ManualClock

T = "sys/kernel/tracing/"
C = "sys/devices/system/cpu/"
STEP = 20_000_000
LINE = re.compile(r"\s*(.+?)-(\d+)\s+\[(\d+)\]\s+\S+\s+(\d+)\.(\d+): (\w+): ?(.*)")


def boot(seed=1, nr_cpus=2, **over):
    return sim.boot(seed=seed, nr_cpus=nr_cpus, clock=ManualClock(), host_kallsyms=False,
                    config_overrides=over or None)


def write(k, path, data):
    return write_file(k, path, data.encode())


def read(k, path):
    return read_file(k, path).decode()


def run(k, seconds, check=None):
    for _ in range(int(seconds * 1e9 // STEP)):
        k.clock.advance(STEP)
        k.timekeeper.run_until_now()
        if check is not None:
            check(k)


def entries(k, path=T + "trace"):
    """(cpu, ns, event, comm, pid, rest) of each entry (microsecond stamps)."""
    out = []
    for line in read(k, path).splitlines():
        m = LINE.match(line)
        if m:
            out.append((int(m.group(3)), int(m.group(4)) * 10**9 + int(m.group(5)) * 1000,
                        m.group(6), m.group(1), int(m.group(2)), m.group(7)))
    return out


def written(k):
    top = next(iter(k.tracing.arrays()))
    return [cb.written for cb in top.buffer.cpus]


def nothing_on_cpu1(k):
    s = k.sched
    assert s.curr[1].pid == 0 and not s.rq[1]
    assert not any(t.on_cpu and t.cpu == 1 for t in s.tasks.values())
    assert 1 in k.driver.down_cpus


def test_function_tracer_writes_nothing_for_an_offline_cpu():
    k = boot()
    write(k, T + "current_tracer", "function")
    run(k, 0.1)
    write(k, C + "cpu1/online", "0")
    assert read(k, C + "online") == "0\n" and read(k, C + "cpu1/online") == "0\n"
    w0 = written(k)
    run(k, 0.4, nothing_on_cpu1)
    w1 = written(k)
    assert w1[1] == w0[1]                    # cpu1: not one call
    assert w1[0] > w0[0] + 100_000           # cpu0 goes on (500,000 calls a second)
    write(k, C + "cpu1/online", "1")
    assert read(k, C + "online") == "0-1\n"
    run(k, 0.1)
    assert written(k)[1] > w1[1] + 20_000    # back: it calls again


def test_events_on_an_offline_cpu_and_tasks_moved_off_it():
    k = boot(seed=3)
    write(k, T + "buffer_size_kb", "30000")
    write(k, T + "events/enable", "1")
    # wait until cpu1 runs a task that goes on for a while: going offline
    # moves it (preempted, then migrated)
    m = k.driver
    for _ in range(200):
        k.clock.advance(1_000_000)
        k.timekeeper.run_until_now()
        cur = k.sched.curr[1]
        r = m.runs.get(cur.pid)
        if cur.pid and not cur.bound and r is not None and r.since + r.left > m.clock[1] + 500_000:
            break
    else:
        raise AssertionError("cpu1 never ran a task long enough")
    moved = cur
    write(k, C + "cpu1/online", "0")
    (a, b), = [s for s in k.cpuhp.spans[1]]
    assert b is None
    assert moved.cpu == 0
    run(k, 0.3, nothing_on_cpu1)
    write(k, C + "cpu1/online", "1")
    a, b = k.cpuhp.spans[1][0]
    run(k, 0.05)
    ents = entries(k)
    on1 = [e for e in ents if e[0] == 1 and a < e[1] < b - 1000]
    assert on1 == []
    assert any(e[0] == 0 and a < e[1] < b for e in ents)
    # the switch that took it off and the migration, on cpu1 as it went
    sw = [e for e in ents if e[0] == 1 and e[2] == "sched_switch" and e[1] <= a + 1000]
    assert sw and "prev_pid=%d " % moved.pid in sw[-1][5] and "next_comm=swapper/1" in sw[-1][5]
    mig = [e for e in ents if e[2] == "sched_migrate_task" and "pid=%d " % moved.pid in e[5]
           and a - 1000 <= e[1] <= a + 1000]
    assert mig and "orig_cpu=1 dest_cpu=0" in mig[0][5]
    # it ran on cpu0 afterwards, and cpu1's own threads never ran while it was off
    assert any(e[0] == 0 and e[2] == "sched_switch" and "next_pid=%d " % moved.pid in e[5]
               for e in ents if a < e[1] < b)
    bound1 = {t.pid for t in k.sched.tasks.values() if t.bound and t.cpu == 1}
    assert bound1
    for e in ents:
        if a < e[1] < b and e[2] == "sched_switch":
            nxt = int(re.search(r"next_pid=(\d+)", e[5]).group(1))
            assert nxt not in bound1
    # back: idle first (cpu_idle), then it runs again
    assert any(e[0] == 1 and e[2] == "cpu_idle" and abs(e[1] - b) <= 1000 for e in ents)
    assert any(e[0] == 1 and e[1] > b for e in ents)


def test_offline_while_nothing_looks():
    """The machine stands still (nothing traced): the CPU goes at once;
    tracing switched on later sees it offline."""
    k = boot()
    run(k, 0.05)
    assert k.driver.frozen
    write(k, C + "cpu1/online", "0")
    assert read(k, C + "offline") == "1\n"
    write(k, T + "current_tracer", "function")
    w0 = written(k)
    run(k, 0.2, nothing_on_cpu1)
    assert written(k)[1] == w0[1] and written(k)[0] > w0[0]
    write(k, C + "cpu1/online", "1")
    run(k, 0.1)
    assert written(k)[1] > w0[1]


def digest(k):
    h = hashlib.sha256()
    for p in ("trace", "per_cpu/cpu0/trace", "per_cpu/cpu1/stats", "per_cpu/cpu1/trace_pipe_raw"):
        h.update(read_file(k, T + p))
    return h.hexdigest()


def traced(seed, hotplug=True, offline=False):
    k = boot(seed, **({} if hotplug else {"CONFIG_HOTPLUG_CPU": False}))
    write(k, T + "current_tracer", "function")
    write(k, T + "events/sched/enable", "1")
    run(k, 0.1)
    if offline:
        write(k, C + "cpu1/online", "0")
        run(k, 0.1)
        write(k, C + "cpu1/online", "1")
    run(k, 0.1)
    return digest(k)


def test_determinism():
    # never offlined: the same bytes as a kernel built without hotplug
    # (and, checked when it was written, as before hotplug existed)
    assert traced(1) == traced(1, hotplug=False)
    # offlined: the same bytes for the same seed
    d = traced(2, offline=True)
    assert d == traced(2, offline=True)
    assert d != traced(2)
