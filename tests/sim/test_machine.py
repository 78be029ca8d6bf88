"""The simulated machine drives the scheduler: one consistent timeline."""

from __future__ import annotations

import os

import pytest

from fakefs import sim
from fakefs.kernel.fs.pseudo import File
from fakefs.sim.files import finish, read_file, write_file
from fakefs.sim.clock import ManualClock
from fakefs.timeline import check

T = "sys/kernel/tracing/"
STEP = 20_000_000


def boot(seed=1, cmdline=""):
    return sim.boot(seed=seed, nr_cpus=2, clock=ManualClock(), host_kallsyms=False,
                    cmdline=cmdline)


def write(k, path, data):
    write_file(k, path, data.encode())


def read(k, path):
    return read_file(k, path).decode()


def run(k, seconds):
    for _ in range(int(seconds * 1e9 // STEP)):
        k.clock.advance(STEP)
        k.timekeeper.run_until_now()


def traced(seed=1, seconds=1.0, tracer=None, stacktrace=False):
    k = boot(seed)
    write(k, T + "events/enable", "1")
    if tracer:
        write(k, T + "current_tracer", tracer)
    if stacktrace:
        write(k, T + "options/stacktrace", "1")
    run(k, seconds)
    write(k, T + "tracing_on", "0")
    return k, read(k, T + "trace")


@pytest.mark.parametrize("tracer,stacktrace", [(None, False), ("function", False), (None, True)])
def test_every_event_on_gives_a_consistent_timeline(tracer, stacktrace):
    _k, text = traced(tracer=tracer, stacktrace=stacktrace, seconds=1.0)
    rep = check(text.splitlines())
    # with the function tracer (500,000 calls a second per CPU) the default
    # buffer holds the last ~0.1 s only
    least = 0.2 if tracer else 1
    assert rep.events["sched_switch"] > 500 * least
    assert rep.events["sched_waking"] > 200 * least
    assert rep.total == 0, rep.text()


def test_rates_of_a_busy_desktop():
    _k, text = traced(seconds=2.0)
    rep = check(text.splitlines())
    per_cpu_s = rep.events["sched_switch"] / 2 / 2.0
    assert 300 <= per_cpu_s <= 5000, per_cpu_s


def test_same_seed_same_trace():
    assert traced(seed=7, seconds=0.3)[1] == traced(seed=7, seconds=0.3)[1]
    assert traced(seed=7, seconds=0.3)[1] != traced(seed=8, seconds=0.3)[1]


def test_scheduler_state_is_coherent():
    k = boot(3)
    sched = k.sched
    for _ in range(30):
        run(k, 0.05)
        seen = {}
        for cpu in range(sched.nr_cpus):
            cur = sched.curr[cpu]
            assert cur.on_cpu and (cur.pid == 0 or cur.state == "R")
            if cur.pid:
                assert cur.pid not in seen
                seen[cur.pid] = cpu
            for t in sched.rq[cpu]:
                assert t.state == "R" and not t.on_cpu and t.pid not in seen
                seen[t.pid] = cpu
        for t in sched.tasks.values():
            if t.pid not in seen:
                assert t.state in ("S", "D", "I", "Z") and not t.on_cpu     # Z: exited


def test_switch_flags_and_wakeup_depths():
    _k, text = traced(seconds=0.5)
    flags = {}
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        parts = line.split()
        ev = next((p for p in parts if p.endswith(":") and p[:-1].startswith("sched_")), None)
        if ev:
            flags.setdefault(ev[:-1], set()).add(parts[2] if parts[1].startswith("[") else parts[3])
    assert flags["sched_switch"] == {"d..2."}
    assert any("N" in f for f in flags["sched_wakeup"])      # a wakeup that preempts
    # the idle task runs with preemption disabled: from its interrupts one deeper
    strip_n = lambda fs: {f[0] + "." + f[2:] for f in fs}
    assert strip_n(_flags_by_event(text, idle=False)["sched_waking"]) == {"d..3.", "d.s3.", "d.h2."}
    assert strip_n(_flags_by_event(text, idle=True)["sched_waking"]) == {"d.s4.", "d.h3."}


def test_schedule_profiling_sees_the_machines_switches():
    k = boot(cmdline="profile=schedule")
    run(k, 0.5)
    assert sum(k.profile.buffer) > 100          # schedule() callers, one hit per switch


@pytest.mark.parametrize("tracer", [None, "function"])
def test_trace_marker_writers_run_on_a_cpu(tracer):
    """A real process writing trace_marker is a task of the machine for its
    write: woken, switched in, its marker, switched out; timestamps in order."""
    k = boot()
    write(k, T + "events/enable", "1")
    if tracer:
        write(k, T + "current_tracer", tracer)
    for i in range(40):          # the function tracer's buffer holds ~0.1 s
        k.clock.advance(2_000_000 if tracer else 7_000_000)
        k.timekeeper.run_until_now()
        n = k.tree.root.walk(T + "trace_marker")
        f = File(n, os.O_WRONLY, 40000 + i % 3)
        n.fops.open(f)
        finish(k, n.fops.write(f, b"hello %d" % i))
    write(k, T + "tracing_on", "0")
    text = read(k, T + "trace")
    rep = check(text.splitlines())
    assert rep.events["tracing_mark_write"] == 40
    assert rep.total == 0, rep.text()
    lines = text.splitlines()
    i = next(j for j, ln in enumerate(lines) if "hello 0" in ln)
    # a kernel that does not follow the real processes gives each writer a
    # pid of its own, as it does a new task: the next one free
    writer = lines[i].split()[0].rsplit("-", 1)[1]
    cpu = lines[i].split()[1]
    before = next(ln for ln in reversed(lines[:i]) if ln.split()[1] == cpu and "sched_switch:" in ln)
    assert "next_pid=%s " % writer in before and 300 < int(writer) < 40000
    assert "-40000 " not in text and "=40000 " not in text
    # stamped when the write gets there: not on the instant the clock shows
    stamps = [ln.split()[3] for ln in lines if "tracing_mark_write:" in ln]
    assert len(set(stamps)) == 40 and not any(s.endswith("000:") for s in stamps)


def _flags_by_event(text, idle=None):
    """{event: its flags} (``idle``: of the idle task's lines only, or of
    the other tasks' only)."""
    out = {}
    for line in text.splitlines():
        if line.startswith("#") or ": " not in line:
            continue
        head, _, rest = line.partition(": ")
        if idle is not None and head.split()[0].endswith("-0") != idle:
            continue
        name = rest.split(":", 1)[0]
        out.setdefault(name, set()).add(head.split()[2])
    return out


def test_interrupts_timers_and_idle_fire_with_the_kernels_context():
    _k, text = traced(seconds=1.0)
    fl = _flags_by_event(text)
    for name in ("irq_handler_entry", "irq_handler_exit", "softirq_raise", "softirq_entry",
                 "softirq_exit", "local_timer_entry", "local_timer_exit", "hrtimer_expire_entry",
                 "hrtimer_expire_exit", "hrtimer_init", "hrtimer_start", "hrtimer_cancel",
                 "cpu_idle", "ipi_send_cpu",
                 "reschedule_entry", "reschedule_exit", "sched_migrate_task"):
        assert name in fl, name
    strip_n = lambda fs: {f[0] + "." + f[2:] for f in fs}     # need-resched may be set
    # an interrupt's count is not in the depth: 0 on a task, 1 on the idle
    # task (which runs with preemption disabled)
    tasks, idle = _flags_by_event(text, idle=False), _flags_by_event(text, idle=True)
    for name in ("irq_handler_entry", "local_timer_entry", "softirq_raise", "reschedule_entry"):
        assert strip_n(tasks[name]) == {"d.h.."}, name
        assert strip_n(idle[name]) == {"d.h1."}, name
    for name in ("softirq_entry", "softirq_exit"):
        assert strip_n(tasks[name]) == {"..s.."}, name
        assert strip_n(idle[name]) == {"..s1."}, name
    # the tick re-armed in its interrupt; a sleeper's hrtimer armed by the task
    assert strip_n(tasks["hrtimer_start"]) == {"d.h1.", "d..1."}
    assert strip_n(idle["hrtimer_start"]) == {"d.h2."}
    lines = text.splitlines()
    assert all("function=tick_" in ln for ln in lines if "hrtimer_start:" in ln and " d.h" in ln)
    assert all("function=hrtimer_wakeup" in ln and " mode=REL " in ln
               for ln in lines if "hrtimer_start:" in ln and " d..1. " in ln)
    # the sleeper's timer on its stack is set up first (hrtimer_init_sleeper()),
    # by the task with interrupts on, at the same address
    sleeps = [i for i, ln in enumerate(lines) if "hrtimer_start:" in ln and " d..1. " in ln]
    assert sleeps and strip_n(fl["hrtimer_init"]) == {"....."}
    for i in sleeps:
        cpu = lines[i].split()[1]
        init = next(ln for ln in reversed(lines[:i]) if ln.split()[1] == cpu)
        assert "hrtimer_init: " in init and "clockid=CLOCK_MONOTONIC mode=REL" in init, init
        assert init.split()[0] == lines[i].split()[0]
        assert init.split("hrtimer=")[1].split()[0] == lines[i].split("hrtimer=")[1].split()[0]
    # a task a device woke before its epoll_wait() timeout takes its timer
    # off the queue, back in its own context, before the call returns
    assert strip_n(fl["hrtimer_cancel"]) == {"d..1."}
    started = {}
    cancels = 0
    for i, ln in enumerate(lines):
        if "hrtimer_start:" in ln and "function=hrtimer_wakeup" in ln:
            started[ln.split("hrtimer=")[1].split()[0]] = (ln.split()[0], int(ln.split("expires=")[1].split()[0]))
        elif "hrtimer_expire_entry:" in ln:
            started.pop(ln.split("hrtimer=")[1].split()[0], None)
        elif "hrtimer_cancel:" in ln:
            got = started.pop(ln.split("hrtimer=")[1].split()[0], None)
            if got is None:
                continue                      # armed before the trace began
            cancels += 1
            ts = round(float(ln.split()[3].rstrip(":")) * 1e9)
            assert got[0] == ln.split()[0] and got[1] > ts, (got, ln)
            cpu = ln.split()[1]
            nxt = next(x for x in lines[i + 1:] if x.split()[1] == cpu and " sys_e" in x)
            assert " sys_exit: " in nxt and nxt.split()[0] == ln.split()[0], nxt
    assert cancels > 10
    assert strip_n(fl["cpu_idle"]) == {"d..1."}
    lines = text.splitlines()
    assert all(ln.split()[0].startswith("<idle>-0") for ln in lines if "cpu_idle:" in ln)
    assert any("name=virtio1-req.0" in ln for ln in lines)
    assert any("function=tick_nohz_handler" in ln for ln in lines) or any(
        "function=tick_sched_timer" in ln for ln in lines)
    assert any("[action=TIMER]" in ln for ln in lines)
    # an idle CPU leaves idle before it handles the interrupt that woke it
    i = next(i for i, ln in enumerate(lines) if "state=4294967295" in ln)
    cpu = lines[i].split()[1]
    nxt = next(ln for ln in lines[i + 1:] if ln.split()[1] == cpu)
    assert any(e in nxt for e in ("irq_handler_entry", "local_timer_entry", "reschedule_entry",
                                  "sched_waking"))


def test_shells_fork_commands_that_exec_and_exit():
    _k, text = traced(seed=4, seconds=2.0)      # (forks in the second the buffer keeps)
    lines = [ln for ln in text.splitlines() if not ln.startswith("#")]
    forks = [ln for ln in lines if "sched_process_fork:" in ln]
    assert forks
    child = forks[0].split("child_pid=")[1].split()[0]
    # (an interrupt on its CPU may signal another task: only its SIGCHLD counts)
    mine = [ln.split(": ")[1] for ln in lines
            if ("pid=%s " % child in ln or "-%s " % child in ln.split("[")[0] + " ")
            and ("signal_generate:" not in ln or " sig=17 " in ln)]
    names = [m.split(":")[0] for m in mine]
    life = ("task_newtask", "sched_wakeup_new", "sched_process_exec", "sched_process_exit",
            "signal_generate")
    assert all(e in names for e in life), names
    first = [names.index(e) for e in life]
    assert first == sorted(first), names
    assert any("prev_state=Z" in ln for ln in lines)
    assert any("signal_deliver: sig=17" in ln for ln in lines)
    assert check(lines).total == 0


def _events(text):
    return [ln for ln in text.splitlines() if not ln.startswith("#") and ": " in ln]


def _name(ln):
    return ln.split(": ", 2)[1].split("(")[0].split(" ")[0]


def test_tasks_make_system_calls_that_enter_and_exit():
    _k, text = traced(seconds=1.0)
    lines = _events(text)
    fl = _flags_by_event(text)
    assert {f[0] + "." + f[2:] for f in fl["sys_enter"]} == {"....."}
    enter = [ln for ln in lines if "sys_enter: NR " in ln]
    leave = [ln for ln in lines if "sys_exit: NR " in ln]
    assert len(enter) > 1000 and len(leave) > 1000
    # every per-syscall line follows its raw line, same task, same instant
    # (unless it is the oldest left of its CPU: the raw one was overwritten)
    seen_cpus = set()
    for i, ln in enumerate(lines):
        cpu = ln.split("[", 1)[1][:3]
        first = cpu not in seen_cpus
        seen_cpus.add(cpu)
        if first:
            continue
        if _name(ln).startswith("sys_") and _name(ln) not in ("sys_enter", "sys_exit"):
            prev = lines[i - 1]
            assert prev.split(": ")[0] == ln.split(": ")[0], (prev, ln)
    # a task returns from the call it slept in when it runs again
    by_pid = {}
    for ln in lines:
        pid = ln.split("[")[0].rsplit("-", 1)[1].strip()
        if "sys_enter: NR" in ln:
            by_pid[pid] = "in"
        elif "sys_exit: NR" in ln:
            assert by_pid.get(pid) in ("in", None), ln
            by_pid[pid] = "out"
    sample = next(ln for ln in lines if "sys_read(" in ln)
    assert "fd: " in sample and "buf: " in sample and "count: " in sample
    assert any(ln.endswith("sys_clone -> 0x0") for ln in lines)      # the child's return
    assert check(lines).total == 0


def test_shell_commands_rename_wait_and_are_freed():
    _k, text = traced(seed=4, seconds=2.0)      # (as above)
    lines = _events(text)
    names = [_name(ln) for ln in lines]
    for n in ("task_rename", "sched_process_wait", "sched_process_free", "sys_wait4",
              "sys_execve", "sys_exit_group"):
        assert n in names, n
    ren = next(ln for ln in lines if "task_rename:" in ln)
    pid = ren.split("task_rename: pid=")[1].split()[0]
    exe = next(ln for ln in lines if "sched_process_exec:" in ln and "pid=%s " % pid in ln)
    assert lines.index(ren) < lines.index(exe)
    assert all("pid=0 " in ln for ln in lines if "sched_process_wait:" in ln)
    free = [ln for ln in lines if "sched_process_free:" in ln]
    assert all((" ..s1. " if ln.lstrip().startswith("<idle>-0 ") else " ..s.. ")
               in ln.replace(" .Ns", " ..s") for ln in free)
    exits = {ln.split("pid=")[1].split()[0] for ln in lines if "sched_process_exit:" in ln}
    freed = [ln.split("pid=")[1].split()[0] for ln in free]
    assert freed and set(freed) <= exits and len(freed) == len(set(freed))


def test_stat_runtime_charges_the_running_task():
    _k, text = traced(seconds=1.0)
    lines = _events(text)
    fl = _flags_by_event(text)
    strip_n = lambda fs: {f[0] + "." + f[2:] for f in fs}
    assert strip_n(fl["sched_stat_runtime"]) <= {"d..2.", "d.h1.", "d..4.", "d.s4.", "d.h3.",
                                                 "d.s5.", "d.h4."}    # (woken by the idle task's irqs)
    for i, ln in enumerate(lines):
        if "sched_switch:" in ln:
            prev = lines[i - 1]
            pp = ln.split("prev_pid=")[1].split()[0]
            if pp != "0" and "sched_stat_runtime:" in prev and prev.split()[1] == ln.split()[1]:
                assert "pid=%s " % pp in prev
    assert all(int(ln.split("runtime=")[1].split()[0]) > 0 for ln in lines
               if "sched_stat_runtime:" in ln)


def test_kworkers_run_delayed_works_from_the_timer_wheel():
    _k, text = traced(seconds=1.0)
    lines = _events(text)
    fl = _flags_by_event(text)
    strip_n = lambda fs: {f[0] + "." + f[2:] for f in fs}
    tasks, idle = _flags_by_event(text, idle=False), _flags_by_event(text, idle=True)
    assert strip_n(tasks["timer_cancel"]) == {"d.s1."}
    assert strip_n(idle["timer_cancel"]) == {"d.s2."}
    assert strip_n(tasks["workqueue_queue_work"]) == {"d.s2."}
    assert strip_n(idle["workqueue_queue_work"]) == {"d.s3."}
    assert strip_n(fl["workqueue_execute_start"]) == {"....."}
    assert strip_n(fl["timer_start"]) <= {"d..1."}
    # a work runs in the kworker it woke, between execute_start and _end
    qw = next(ln for ln in lines if "workqueue_queue_work:" in ln)
    work = qw.split("work struct=")[1].split()[0]
    start = next(ln for ln in lines[lines.index(qw):]
                 if "workqueue_execute_start: work struct %s:" % work in ln)
    assert start.split()[0].startswith("kworker/")
    # the wheel: bucket expiry rounded up by the level's granularity
    for ln in lines:
        if " timer_start:" in ln:
            exp = int(ln.split("expires=")[1].split()[0])
            bucket = int(ln.split("bucket_expiry=")[1].split()[0])
            idx = int(ln.split("idx=")[1].split()[0])
            lvl = idx // 64
            assert bucket > exp and bucket - exp <= 8 ** lvl and bucket % 8 ** lvl == 0
    assert check(lines).total == 0


def test_busy_spans_are_who_ran_when():
    """The scheduler's record of who ran: the spans of non-idle tasks per
    CPU in a window, forgotten before the start of the next step."""
    k = sim.boot(seed=1, nr_cpus=2, clock=ManualClock(), host_kallsyms=False)
    k.add_machine_watcher(lambda: True)           # as if something traced
    t0 = k.sim_time
    k.timekeeper.advance_to(t0 + 20_000_000)
    spans = k.sched.busy_spans(t0, k.sim_time)
    assert spans and all(t0 <= s < e <= k.sim_time for _c, s, e, _t in spans)
    for cpu, s, _e, task in spans:                                   # the task the history has
        h = k.sched.history[cpu]
        assert task.pid and max((x for x in h if x[0] <= s), key=lambda x: x[0])[1] is task
    for cpu in range(2):
        mine = sorted((s, e) for c, s, e, _t in spans if c == cpu)
        assert all(a[1] <= b[0] for a, b in zip(mine, mine[1:]))     # one task at a time
        h = k.sched.history[cpu]
        assert h[-1][1] is k.sched.curr[cpu]
    k.sched.forget_before(k.sim_time)
    assert all(h[0][0] <= k.sim_time for h in k.sched.history)
    assert all(len(h) == 1 or h[1][0] > k.sim_time for h in k.sched.history)


# --- nothing sees the machine: it stands still --------------------------------

def test_unseen_the_machine_stands_still_and_starts_again_when_looked_at():
    k = boot()
    m = k.driver
    k.clock.advance(STEP)
    k.timekeeper.run_until_now()
    assert m.frozen and not m.heap                # nothing traces: nothing simulated
    frozen_at = m.time
    k.clock.advance(500_000_000)
    k.timekeeper.run_until_now()
    assert m.time == frozen_at
    write(k, T + "events/sched/enable", "1")
    enabled = k.sim_time
    k.clock.advance(200_000_000)
    k.timekeeper.run_until_now()
    assert not m.frozen and m.time >= enabled + 199_000_000
    trace = read(k, T + "trace")
    stamps = [float(ln.split(": ", 1)[0].rsplit(None, 1)[-1])
              for ln in trace.splitlines() if "sched_switch:" in ln]
    assert len(stamps) > 20 and min(stamps) >= enabled / 1e9
    rep = check(trace.splitlines())                # one consistent timeline from there
    assert rep.total == 0, rep.text()
    write(k, T + "events/sched/enable", "0")
    k.clock.advance(STEP)
    k.timekeeper.run_until_now()
    assert m.frozen


def test_what_a_machine_watcher_sees_keeps_it_running():
    k = boot(cmdline="profile=2")                   # the profile's ticks see it
    k.clock.advance(STEP)
    k.timekeeper.run_until_now()
    assert not k.driver.frozen
    k = boot()
    write(k, T + "options/event-fork", "1")        # a pid list follows forks
    k.clock.advance(STEP)
    k.timekeeper.run_until_now()
    assert not k.driver.frozen


@pytest.mark.parametrize("seed", [3, 5, 7, 11])   # each fails without the fix
def test_a_halted_cpu_switches_only_after_the_interrupt_that_wakes_it(seed):
    """A task woken onto a halted CPU from another one: that CPU leaves idle
    when the reschedule IPI arrives (cpu_idle exit, the IPI, then the
    switch), even if a reschedule of its own was still pending (found in a
    60 s capture: the switch came first, the idle exit after it)."""
    from fakefs.kernel.sched import CTX_TASK
    from fakefs.sim.machine import _RESCHED
    k = boot(seed=seed)
    write(k, T + "events/enable", "1")
    m = k.driver
    sched = k.sched
    run(k, 0.1)
    for _ in range(2000):                   # CPU 0 halted, CPU 1 running a task
        k.clock.advance(100_000)
        k.timekeeper.run_until_now()
        if sched.idling[0] and sched.curr[1].pid != 0 and \
                m.clock[0] < k.sim_time and m.clock[1] < k.sim_time:
            break
    else:
        pytest.skip("no moment with CPU 0 halted and CPU 1 busy")
    sleeper = next(r for r in m.runs.values() if r.task.state == "S" and not r.host
                   and r.task.pid > 0)
    sleeper.task.cpu = 0
    t = max(max(m.clock), k.sim_time) + 1000    # after what the step already wrote
    m._at(1, t)
    m._try_wake(sleeper, 1, t, CTX_TASK)
    assert sched.need_resched[0]
    m._push(t + 500, _RESCHED, 0, 0)        # a stale one, before the IPI lands
    run(k, 0.02)
    write(k, T + "tracing_on", "0")
    lines = [ln for ln in read(k, T + "trace").splitlines() if not ln.startswith("#")]
    pid = sleeper.task.pid
    first = next(i for i, ln in enumerate(lines)
                 if "[000]" in ln and "sched_switch:" in ln and "next_pid=%d " % pid in ln)
    before = [ln for ln in lines[:first] if "[000]" in ln]
    # the CPU had left idle (the IPI, or an interrupt that came first) when it switched
    idle = [ln for ln in before if "cpu_idle: state=" in ln]
    assert idle and "cpu_idle: state=4294967295" in idle[-1], before[-6:]
    report = check(read(k, T + "trace").splitlines())
    assert report.total == 0, report.text()
