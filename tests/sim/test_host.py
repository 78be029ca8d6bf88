"""The real processes that use the mount are tasks of the simulated machine."""

from __future__ import annotations

import os

from fakefs import sim
from fakefs.kernel import fork
from fakefs.sim.files import read_file, write_file
from fakefs.kernel.init import Kernel
from fakefs.sim.clock import ManualClock
from fakefs.sim import host
from fakefs.timeline import check

from hostlib import MS, T, boot, fork_exec_exit, lines, run, write


def traced_command(*settings, after=0.06):
    """A booted machine with ``settings`` written (path, value), where a
    followed process forks a child that execs and exits; tracing stops
    ``after`` seconds later."""
    k, m = boot()
    for path, value in settings:
        write(k, path, value)
    run(k, 0.04)
    fork_exec_exit(k, m)
    run(k, after)
    write(k, "tracing_on", "0")
    return k, m


def test_a_followed_process_forks_execs_and_exits_in_the_trace():
    k, _m = traced_command(("events/sched/enable", "1"))
    got = lines(k)
    text = "\n".join(got)
    assert "sched_process_fork: comm=ftracetest pid=5000 child_comm=ftracetest child_pid=5001" in text
    assert "sched_wakeup_new: comm=ftracetest pid=5001" in text
    assert "sched_process_exec: filename=/usr/bin/sleep pid=5001 old_pid=5001" in text
    assert "sched_process_exit: comm=sleep pid=5001" in text
    assert "prev_pid=5001 prev_prio=120 prev_state=Z" in text
    assert "sched_process_free: comm=sleep pid=5001" in text
    # in that order, and on a consistent timeline
    order = [i for i, ln in enumerate(got) for ev in ("sched_process_fork", "sched_process_exec",
                                                      "sched_process_exit", "sched_process_free")
             if ev + ":" in ln and "5001" in ln]
    assert order == sorted(order) and len(order) == 4
    report = check(read_file(k, T + "trace").decode().splitlines())
    assert report.total == 0, report.text()


def test_a_followed_sleep_sleeps_in_clock_nanosleep():
    """After its exec, sleep(1) makes its dynamic loader's calls, in their
    order, and sleeps in clock_nanosleep(), not in a shell's read() of its
    terminal."""
    k, m = traced_command(("events/raw_syscalls/sys_enter/enable", "1"),
                          ("events/sched/sched_process_exec/enable", "1"))
    got = lines(k)
    exe = next(i for i, ln in enumerate(got) if "sched_process_exec:" in ln and "-5001 " in ln)
    after = [int(ln.split("NR ")[1].split()[0]) for ln in got[exe:]
             if "-5001 " in ln and "sys_enter:" in ln]
    loader = [c.nr for c in m.calls.profiles["sleep"].startup]
    assert after == loader + [230, 231], after          # then clock_nanosleep, exit_group
    assert loader[:4] == [12, 9, 21, 257] and loader.count(0) == 1   # brk, mmap, access, openat


def test_a_followed_sleep_sleeps_and_exits_on_their_own_paths():
    """sleep(1)'s switches show the kernel paths of its calls: it sleeps in
    do_nanosleep() and leaves for the last time from do_task_dead(), by way
    of exit_group(), not from a shell's terminal read."""
    k, _m = traced_command(("events/sched/sched_switch/enable", "1"),
                           ("events/sched/sched_process_exec/enable", "1"),
                           ("options/stacktrace", "1"))
    got = lines(k)
    exe = next(i for i, ln in enumerate(got) if "sched_process_exec:" in ln and "-5001 " in ln)
    stacks, cur = [], None
    for ln in got[exe:]:
        if "sched_switch:" in ln:
            cur = [ln.split("prev_state=")[1].split()[0]] if "prev_pid=5001 " in ln else None
            if cur:
                stacks.append(cur)
        elif cur is not None and ln.startswith(" => "):
            cur.append(ln[4:])
    assert stacks and stacks[-1][0] == "Z", stacks
    for state, *frames in stacks[:-1]:
        assert state == "S" and "do_nanosleep" in frames and "tty_read" not in frames, frames
    assert stacks[-1][1:6] == ["__schedule", "do_task_dead", "do_exit", "do_group_exit",
                               "__x64_sys_exit_group"], stacks[-1]


def test_the_function_tracer_sees_kernel_clone_and_exec_of_host_processes():
    k, _m = traced_command(("set_ftrace_filter", "kernel_clone do_execve*"),
                           ("current_tracer", "function"), after=0.04)
    text = "\n".join(lines(k))
    assert "ftracetest-5000" in text and "kernel_clone <-" in text
    assert any("-5001 " in ln and "do_execveat_common" in ln for ln in lines(k))


def test_unfollowed_processes_and_pids_of_simulated_tasks_are_left_alone():
    k, m = boot()
    run(k, 0.02)
    assert m.host.event("fork", k.sim_time, 6001, ppid=6000) is None     # parent unknown
    sim_pid = next(p for p, r in m.runs.items() if not r.host and r.task.pid > 1)
    m.host.caller(sim_pid, "bash")
    assert sim_pid not in m.host.followed


def test_host_events_survive_a_skipped_stretch():
    """What a followed process did in a skipped stretch is a fact after it:
    its child is followed, named after it, and a task when it next runs."""
    k, m = boot()
    run(k, 0.02)
    m.host.caller(5000, "sh")
    m.host.event("fork", k.sim_time + MS, 5001, ppid=5000)
    k.driver.skip(k.sim_time, k.sim_time + 10 * MS)
    run(k, 0.04)
    assert 5001 in m.host.followed and m.host.comms[5001] == "sh"
    assert m.host.task(5001).comm == "sh" and m.runs[5001].host


def test_simulated_forks_skip_pids_the_host_holds():
    k, m = boot()
    held = set(range(k.sched.next_pid, k.sched.next_pid + 5))
    k.sched.pid_in_use = held.__contains__
    t = k.sched.spawn("x")
    assert t.pid not in held and t.pid == max(held) + 1


def test_many_short_lived_children_keep_the_machine_consistent():
    import random
    rng = random.Random(5)
    k, m = boot()
    k.sched.pid_in_use = m.host.pid_taken
    write(k, "events/sched/enable", "1")
    run(k, 0.02)
    m.host.caller(5000, "sh")
    base = k.sim_time
    for i in range(60):
        t = base + rng.randrange(0, 80 * MS)
        pid = 6000 + i
        m.host.event("fork", t, pid, ppid=5000)
        t_exec = t + rng.randrange(0, 40_000)
        m.host.event("exec", t_exec, pid, filename="/bin/true")
        m.host.event("exit", t_exec + rng.randrange(0, 60_000), pid)
    run(k, 0.2)
    report = check(read_file(k, T + "trace").decode().splitlines())
    assert report.total == 0, report.text()
    assert not any(r.host and r.task.pid >= 6000 for r in m.runs.values())


def test_a_reused_pid_is_a_new_process():
    """The host's pids wrap: a process that makes a request with the pid of
    one that exited earlier is alive, and its forks are the machine's."""
    k, m = boot()
    run(k, 0.02)
    fork_exec_exit(k, m, parent=5000, child=5001)
    run(k, 0.02)
    assert 5001 in m.host.exited and 5001 not in m.runs
    m.host.caller(5001, "sh")                 # another process, the same pid
    m.host.event("fork", k.sim_time + MS, 5002, ppid=5001, tgid=5002)
    run(k, 0.02)
    assert 5002 in m.runs and m.runs[5002].host


def test_a_sleep_whose_exec_and_exit_come_dated_alike_still_makes_its_loaders_calls():
    """``perf ftrace -T vfs_read -- sleep 0.2``: the host reported the
    child's exec and exit at one instant (both came while a request's
    catch-up held the clock still, or were taken late, after the kernel had
    passed them).  Its loader's calls still come between them, as they do
    on a real machine: the read() and pread64()s perf's filter shows, then
    exit_group."""
    for lives in (0, 10_000):
        k, m = boot()
        write(k, "set_ftrace_pid", "5001")
        write(k, "set_ftrace_filter", "vfs_read")
        write(k, "current_tracer", "function")
        write(k, "events/raw_syscalls/sys_enter/enable", "1")
        run(k, 0.04)
        fork_exec_exit(k, m, lives=lives)
        run(k, 0.06)
        write(k, "tracing_on", "0")
        got = lines(k)
        exe = next(i for i, ln in enumerate(got) if "sys_enter: NR 59 " in ln and "-5001 " in ln)
        after = [int(ln.split("NR ")[1].split()[0]) for ln in got[exe + 1:]
                 if "-5001 " in ln and "sys_enter:" in ln]
        loader = [c.nr for c in m.calls.profiles["sleep"].startup]
        assert after == loader + [230, 231], (lives, after)   # clock_nanosleep, exit_group
        reads = [ln for ln in got[exe:] if "vfs_read <-" in ln]
        assert [ln.split("<-")[1] for ln in reads[:3]] == ["ksys_read", "ksys_pread64",
                                                           "ksys_pread64"], got
        assert all(ln.split()[0] == "sleep-5001" for ln in reads), reads
        assert 5001 in m.host.exited and 5001 not in m.runs


def test_sleep_after_sleep_each_makes_its_loaders_calls():
    """A followed shell runs ``sleep`` twelve times, one after the other:
    each makes all its loader's calls, in order (the read() and pread64()s
    whose vfs_read() perf ftrace -T shows).  A burst's end left queued when
    its task was switched out used to match the task running on that CPU
    when it came due if that one had counted as many ends (each task
    counted from 0): a new sleep's burst ended before its loader was done
    (3 of these 12; under test_sandbox's load, a kernel thread's end did it
    to perf ftrace's sleep)."""
    k, m = boot()
    write(k, "events/raw_syscalls/sys_enter/enable", "1")
    run(k, 0.04)
    m.host.caller(5000, "sh")
    sleeps = range(5001, 5013)
    for i, pid in enumerate(sleeps):
        t = k.sim_time + (1 + 5 * i) * MS
        m.host.event("fork", t, pid, ppid=5000, tgid=pid)
        m.host.event("exec", t + MS, pid, filename="/usr/bin/sleep")
        m.host.event("exit", t + 4 * MS, pid)
    run(k, 0.08)
    write(k, "tracing_on", "0")
    got = lines(k)
    loader = [c.nr for c in m.calls.profiles["sleep"].startup]
    for pid in sleeps:
        mine = [int(ln.split("NR ")[1].split()[0]) for ln in got
                if ln.split()[0].endswith("-%d" % pid) and "sys_enter:" in ln]
        nrs = mine[mine.index(59) + 1:]
        assert nrs[:len(loader)] == loader, (pid, nrs)


def test_a_child_acts_after_its_fork_even_when_the_fork_is_put_off():
    """The parent's CPU ran further than the fork's instant, so the fork is
    put off; the child's exec (stamped later, but due earlier than the put
    off fork) waits for it, and the fork is not lost."""
    k, m = boot()
    write(k, "set_ftrace_filter", "kernel_clone")
    write(k, "current_tracer", "function")
    run(k, 0.04)
    m.host.caller(5000, "sh")
    parent = m.host.task(5000)
    t = k.sim_time + MS
    m.clock[parent.cpu] = t + 5 * MS          # its CPU is busy past the fork
    m.host.event("fork", t, 5001, ppid=5000, tgid=5001)
    m.host.event("exec", t + 10_000, 5001, filename="/usr/bin/true")
    run(k, 0.04)
    assert 5001 in m.runs or 5001 in m.host.exited
    assert any("ftracetest" in ln or "sh-5000" in ln for ln in lines(k) if "kernel_clone" in ln)
    assert not m.host.forking


def _machine_is_sane(k, m):
    """Every CPU runs its idle task or a task of the machine, and no
    followed process is a zombie while it still acts."""
    for cpu in range(k.sched.nr_cpus):
        curr = k.sched.curr[cpu]
        assert curr.pid == 0 or curr.pid in m.runs, (cpu, curr)
    for pid in m.host.followed:
        r = m.runs.get(pid)
        assert r is None or r.task.state != "Z", pid


def test_a_busy_machine_never_preempts_a_task_in_the_middle_of_its_exit():
    """Children exit while every CPU is busy: the parent, woken for its
    next fork, must not take a CPU whose task is between do_exit() and its
    last switch (that switch would then make the parent the zombie)."""
    import random
    for seed in range(6):
        rng = random.Random(seed)
        k, m = boot()
        k.sched.pid_in_use = m.host.pid_taken
        run(k, 0.02)
        m.host.caller(5000, "sh")
        t = k.sim_time + MS
        pid = 6000
        for _ in range(150):
            for _child in range(rng.randrange(1, 4)):
                m.host.event("fork", t, pid, ppid=5000)
                m.host.event("exit", t + rng.randrange(5_000, 40_000), pid)
                pid += 1
                t += rng.randrange(1_000, 30_000)
            t += rng.randrange(10_000, 300_000)
        run(k, 0.2)
        _machine_is_sane(k, m)
        assert m.runs[5000].task.state != "Z"


def test_host_events_of_a_skipped_stretch_are_facts_in_their_order():
    """A gap restarts the machine: what the real processes did before its
    end is left as facts, in the order it happened (an exec renames before
    the exit takes the task away); what comes after is done at its instant."""
    k, m = boot()
    run(k, 0.02)
    m.host.caller(5000, "sh")
    t = k.sim_time + MS
    for i in range(12):
        pid = 6000 + i
        m.host.event("fork", t + i * 100_000, pid, ppid=5000)
        m.host.event("exec", t + i * 100_000 + 20_000, pid, filename="/bin/true")
        if i < 11:
            m.host.event("exit", t + i * 100_000 + 40_000, pid)
    m.host.event("exit", t + 20 * MS, 6011)
    done = []
    real = m.host.run
    m.host.run = lambda when, action: (done.append((when, action)), real(when, action))
    k.driver.skip(k.sim_time, k.sim_time + 10 * MS)
    assert all(6000 + i not in m.runs and 6000 + i in m.host.exited for i in range(11))
    assert m.host.comms[6011] == "true"
    run(k, 0.04)
    assert done == [(t + 20 * MS, ("exit", 6011))]


def test_while_the_machine_stands_still_host_events_are_facts_only():
    k = Kernel(seed=1, nr_cpus=2, clock=ManualClock(), host_kallsyms=False)
    k.host_tasks = True
    k.host_comm = lambda pid: "sh"
    sim.boot_kernel(k)
    m = sim.attach(k)
    run(k, 0.02)
    assert m.frozen                                 # nothing traces
    pid, cpu, t = m.host_task(5000, k.sim_time)     # a marker's writer
    assert pid == 5000 and t > k.sim_time and k.sched.tasks[5000].comm == "sh"
    assert m.runs[5000].host and not m.heap and cpu == k.sched.tasks[5000].cpu
    for i in range(50):                             # a busy shell
        m.host.event("fork", k.sim_time, 6000 + i, ppid=5000)
        m.host.event("exec", k.sim_time, 6000 + i, filename="/usr/bin/cat")
        m.host.event("exit", k.sim_time, 6000 + i)
    m.host.event("fork", k.sim_time, 7000, ppid=5000)
    m.host.event("exec", k.sim_time, 7000, filename="/usr/bin/head")
    assert not m.heap and 6000 not in m.runs
    assert m.host.task(7000).comm == "head" and 7000 in m.host.followed
    m.host.event("exit", k.sim_time, 5000)
    assert 5000 not in m.runs and 5000 not in k.sched.tasks


def test_a_fork_right_after_tracing_starts_is_simulated_not_noted():
    """Enabled while the machine stood still, and no step since: the
    fork the host reports is the machine's (it starts again first)."""
    k = Kernel(seed=1, nr_cpus=2, clock=ManualClock(), host_kallsyms=False)
    k.host_tasks = True
    sim.boot_kernel(k)
    m = sim.attach(k)
    run(k, 0.02)
    m.host.caller(5000, "sh")
    assert m.frozen
    write_file(k, "sys/kernel/tracing/events/sched/sched_process_fork/enable", b"1")
    done = m.host.event("fork", k.sim_time, 5001, ppid=5000)
    assert done is not None and not m.frozen
    run(k, 0.02)
    assert "child_pid=5001" in read_file(k, "sys/kernel/tracing/trace").decode()


def test_a_followed_process_allocates_and_frees_in_its_own_context():
    """Its exec looks paths up (putname), its exit frees its VMAs: kmem
    events of its pid, with those call sites, on a consistent timeline."""
    k, _m = traced_command(("events/kmem/kmem_cache_free/enable", "1"),
                           ("events/sched/enable", "1"))
    mine = [ln for ln in lines(k) if "-5001 " in ln and "kmem_cache_free:" in ln]
    assert sum("call_site=putname+" in ln and "name=names_cache" in ln for ln in mine) >= 12
    assert sum("call_site=vm_area_free+" in ln and "name=vm_area_struct" in ln for ln in mine) >= 20
    assert any("call_site=free_task+" in ln and "name=task_struct" in ln for ln in mine)
    report = check(read_file(k, T + "trace").decode().splitlines())
    assert report.total == 0, report.text()


def test_the_top_free_site_of_a_window_with_a_short_command_recurs():
    """event-filter-function.tc: the most frequent kmem_cache_free call site
    of a window in which a command runs is seen again in the next one."""
    import collections
    k, m = boot()
    run(k, 0.04)
    pid = 6000

    def window():
        nonlocal pid
        write(k, "trace", "")
        write(k, "events/kmem/kmem_cache_free/enable", "1")
        write(k, "tracing_on", "1")
        fork_exec_exit(k, m, parent=5000, child=pid, t=k.sim_time + 100_000)
        pid += 1
        k.clock.advance(5 * MS)            # the window: about as long as the command
        k.timekeeper.run_until_now()
        write(k, "tracing_on", "0")
        write(k, "events/kmem/kmem_cache_free/enable", "0")
        return [ln.split("call_site=")[1].split("+")[0] for ln in lines(k) if "call_site=" in ln]

    for _ in range(20):
        top = collections.Counter(window()).most_common(1)[0][0]
        assert top in window()
        run(k, 0.02)


def test_what_a_followed_process_did_in_a_skipped_stretch_is_not_done_later():
    """Of a long unobserved stretch the kernel skips what nobody can see:
    a followed process's exec in it is a fact (its new name), not traced at
    the skip's end, where ``sleep 2`` would seem to have slept less."""
    k, m = boot()
    write(k, "events/sched/sched_process_exec/enable", "1")
    write(k, "events/sched/sched_process_exit/enable", "1")
    run(k, 0.04)
    m.host.caller(5000, "sh")
    t = k.sim_time + MS
    m.host.event("fork", t, 5001, ppid=5000, tgid=5001)
    m.host.event("exec", t + MS, 5001, filename="/bin/sleep")
    m.host.event("exit", t + 2000 * MS, 5001)
    k.clock.advance(t + 1500 * MS - k.sim_time)
    k.timekeeper._skip(t + 1500 * MS)        # what the catch-up of a gap does
    run(k, 0.6)
    got = [ln for ln in lines(k) if "-5001 " in ln]
    assert len(got) == 1 and "sched_process_exit: comm=sleep pid=5001 " in got[0], got
    assert abs(float(got[0].split()[3].rstrip(":")) * 1e9 - (t + 2000 * MS)) < MS


def test_a_gaps_skip_stops_at_what_a_followed_process_did():
    """A gap's skip does not pass a followed process's fork and exec: the
    machine simulates a moment of each in full, traced, at its instant
    (func-filter-pid.tc's ``ping`` under load: the child's do_execve and
    the parent's kernel_clone), and the rest of the stretch is still
    skipped (here a small buffer of a dense event: what the moment traced
    is overwritten by the window at the end, but the machine did it)."""
    gap = 40_000 * MS
    k, m = boot(always_seen=False)
    write(k, "set_ftrace_filter", "kernel_clone do_execveat_common.isra.0")
    write(k, "current_tracer", "function")
    write(k, "events/sched/sched_process_exec/enable", "1")
    write(k, "buffer_size_kb", "16")
    write(k, "events/sched/sched_switch/enable", "1")
    run(k, 0.04)
    m.host.caller(5000, "sh")
    start = k.sim_time
    t = start + gap - 6000 * MS + 300_000
    fork_exec_exit(k, m, t=t, lives=50_000 * MS)
    spans = []
    k.add_timer_hook(lambda t0, t1: spans.append((t0, t1)))
    k.clock.advance(gap)
    k.timekeeper.run_until_now()
    assert k.timekeeper.gap is None
    # in full: the probe, the stretches of SHOWN_NS from the fork's tick
    # and the exec's (2 ms apart) and the window at the end
    assert sum(b - a for a, b in spans) < 3000 * MS, spans
    fork_tick = t - t % MS
    assert any(a <= fork_tick < b for a, b in spans), spans       # not skipped
    assert m.host.task(5001).comm == "sleep"                    # the exec was done


def test_a_step_where_a_followed_process_did_something_is_traced_before_a_gaps_window():
    """Before a gap's window tracing records nothing (quiet time), but for
    the steps in which the machine did a followed process's event or less
    than SHOWN_NS after it (``HostProcesses.shown_in``, a traced need)."""
    from fakefs.sim.timekeeper import SHOWN_NS
    k, m = boot()
    run(k, 0.04)
    t = k.sim_time + MS + 300_000
    fork_exec_exit(k, m, t=t, lives=50 * MS)
    run(k, 0.1)
    backlog = k.trace_activity.backlog
    assert m.host.shown_in in k.trace_hits.traced_needs
    exited = t + 52 * MS
    backlog.window_from = 1 << 62                  # all of it before a window
    assert not backlog.untraced(exited - MS, exited + MS)
    assert not backlog.untraced(exited + MS, exited + SHOWN_NS)
    assert backlog.untraced(exited + SHOWN_NS, exited + SHOWN_NS + MS)
    assert backlog.untraced(exited - 3 * MS, exited - 2 * MS)


def test_marker_writers_on_a_virtual_clock_are_bounded_and_a_live_one_keeps_its_pid():
    """A kernel that does not follow the real processes gives each writer a
    pid of its own: 5,000 writers come and go, the machine keeps a bounded
    number of them (the gone ones exit here too); a writer that lives
    throughout keeps its pid, its comm read once; a reused host pid with a
    new start time is another writer."""
    k, m = boot()
    k.host_tasks = False
    alive = {4000: 111}                          # host pid -> start time
    comm_reads = []
    k.host_start = alive.get
    k.host_comm = lambda pid: comm_reads.append(pid) or "w%d" % pid
    run(k, 0.02)
    booted = len(m.sched.tasks)
    keeper, _cpu, _t = m.host_task(4000, k.sim_time)
    assert keeper > max(p for p in m.sched.tasks if p != keeper)
    for n in range(5000):
        pid = 10_000 + n
        alive[pid] = 7
        m.host_task(pid, k.sim_time)
        del alive[pid]                            # it wrote once and exited
        if n % 50 == 0:                           # they come over time
            k.clock.advance(MS)
            k.timekeeper.run_until_now()
        if n == 2500:                             # unseen while more than WRITERS_KEPT came
            assert m.host_task(4000, k.sim_time)[0] == keeper
    run(k, 0.04)                                  # the last gone ones' exits run
    h = m.host
    assert len(h.writers) <= host.WRITERS_KEPT
    for kept in (h.followed, h.comms, h.last_call, m.runs, m.sched.tasks):
        assert len(kept) <= booted + host.WRITERS_KEPT + fork.DEAD_KEPT, len(kept)
    assert m.host_task(4000, k.sim_time)[0] == keeper
    assert comm_reads.count(4000) == 1
    alive[4000] = 222                             # the pid reused by another process
    assert m.host_task(4000, k.sim_time)[0] not in (keeper, 0)
    assert comm_reads.count(4000) == 2


def test_a_real_processs_affinity_is_its_cpus_here():
    """A writer pinned (sched_setaffinity on the host) to one CPU makes its
    calls on that CPU here, whichever CPU it ran on before, and the sched
    events stay a machine's; unpinned (every CPU of the host) it may run
    anywhere again."""
    k, m = boot()
    write(k, "events/sched/enable", "1")
    mask = {}
    m.host.affinity = mask.get
    run(k, 0.02)
    for cpu in (1, 0, 1, 1, 0):
        mask[5000] = frozenset({cpu})
        for i in range(4):
            _pid, got, t = m.host_task(5000, k.sim_time)
            assert got == cpu
            if i < 3:                             # the last call's task still runs when
                k.clock.advance(MS)               # the next pins it elsewhere
                k.timekeeper.run_until_now()
        assert m.sched.tasks[5000].allowed == (cpu,)
    del mask[5000]
    m.host_task(5000, k.sim_time)
    assert m.sched.tasks[5000].allowed is None
    run(k, 0.02)
    write(k, "tracing_on", "0")
    report = check(read_file(k, T + "trace").decode().splitlines())
    assert not report.violations, report.examples
    moved = [ln for ln in lines(k) if "sched_migrate_task" in ln and " pid=5000 " in ln]
    assert moved, "a pinned writer running elsewhere is moved (sched_migrate_task)"


def test_select_task_rq_keeps_to_the_allowed_cpus():
    from fakefs.kernel.sched import Task
    k, m = boot()
    s = m.sched
    t = Task(9999, "pinned")
    t.cpu, t.allowed = 0, (1,)
    assert s.select_task_rq(t) == 1
    t.allowed = None
    assert s.select_task_rq(t) in range(s.nr_cpus)


def test_a_fork_noted_while_nothing_sees_the_machine_still_follows_the_pid_lists():
    """event-fork: the fork probe runs on every fork, traced or not; a fork
    the machine only notes (it happened in a stretch the machine skipped,
    nobody having seen it) lists the child with its parent (ftracetest's
    event-no-pid.tc: a child of a filtered-out shell had events), and an
    exit noted so takes it off."""
    k = Kernel(seed=1, nr_cpus=2, clock=ManualClock(), host_kallsyms=False)
    k.host_tasks = True
    k.host_comm = lambda pid: "sh"
    sim.boot_kernel(k)
    m = sim.attach(k)
    write(k, "set_event_notrace_pid", "5000")
    write(k, "set_event_pid", "5000")
    write(k, "options/event-fork", "1")
    run(k, 0.02)
    m.host_task(5000, k.sim_time)
    t = k.sim_time
    m.host.skipped([(t + MS, ("fork", 5000, 6001, 6001))], t + 2 * MS)
    listed = lambda f: read_file(k, T + f).decode().split()
    assert listed("set_event_notrace_pid") == ["5000", "6001"]
    assert listed("set_event_pid") == ["5000", "6001"]
    m.host.skipped([(t + 3 * MS, ("exit", 6001))], t + 4 * MS)
    assert listed("set_event_notrace_pid") == ["5000"]


def test_a_followed_exec_of_a_probed_program_hits_its_uprobes(tmp_path):
    """A uprobe at the program's _init (and at its entry point) fires in
    the followed child that executes the file, after its exec; one
    elsewhere in the file, or on another file, does not."""
    from elf_helpers import make_elf
    prog = make_elf(tmp_path / "prog", entry=0x1040, init=0x1000)
    other = make_elf(tmp_path / "other")
    k, m = boot()
    for cmd in ("p:init %s:0x1000" % prog, "r:initret %s:0x1000" % prog,
                "p:entry %s:0x1040" % prog, "p:middle %s:0x1020" % prog,
                "p:elsewhere %s:0x1000" % other):
        write_file(k, T + "uprobe_events", (cmd + "\n").encode(),
                     os.O_WRONLY | os.O_APPEND)
    write(k, "events/uprobes/enable", "1")
    write(k, "events/sched/sched_process_exec/enable", "1")
    run(k, 0.02)
    st = os.stat(prog)
    m.host.caller(5000, "ftracetest")
    t = k.sim_time + MS
    m.host.event("fork", t, 5001, ppid=5000, tgid=5001)
    m.host.event("exec", t + 2 * MS, 5001, filename=prog, exe=(st.st_dev, st.st_ino))
    m.host.event("exit", t + 6 * MS, 5001)
    run(k, 0.04)
    write(k, "tracing_on", "0")
    got = [ln for ln in lines(k) if "-5001 " in ln]
    names = [ln.split(": ")[1].split(":")[0] for ln in got]
    assert names == ["sched_process_exec", "entry", "init", "initret"]
    cpus = {ln.split("[")[1][:3] for ln in got}
    assert len(cpus) == 1                      # where the new program runs
    stamps = [float(ln.split("]")[1].split()[1].rstrip(":")) for ln in got]
    assert stamps == sorted(stamps) and stamps[1] - stamps[0] > 0.0002   # after ld.so
    report = check(read_file(k, T + "trace").decode().splitlines())
    assert report.total == 0, report.text()


def test_a_request_served_where_a_lagging_machine_got_comes_after_its_callers_fork():
    """A request served at a lagging machine's instant (``Pacer.served_at``)
    came after its caller's fork, dated later by the host: the fork is
    pulled in to that instant, in order with what followed it, so the
    request (a write of 0 to a kprobe's enable) finds it done."""
    k, m = boot()
    write(k, "set_ftrace_filter", "kernel_clone")
    write(k, "current_tracer", "function")
    run(k, 0.04)
    m.host.caller(5000, "sh")
    t = k.sim_time
    m.host.event("fork", t - MS // 2, 5002, ppid=5000, tgid=5002)     # not after: stays
    m.host.event("fork", t + 10 * MS, 5001, ppid=5000, tgid=5001)
    m.host.event("exec", t + 11 * MS, 5001, filename="/usr/bin/true")
    served = t + MS
    assert m.host.pull_in(served) == served + host.SETTLE_NS
    moved = [(t, what[0]) for t, _seq, what in
             sorted((e[0], e[1], e[4]) for e in m.heap if e[2] == host.HOST)]
    assert moved == [(k.sim_time, "fork"), (served, "fork"), (served, "exec")]   # in order
    k.timekeeper.advance_to(served + host.SETTLE_NS)
    assert 5001 in m.runs and 5002 in m.runs and not m.host.forking
    assert m.host.pull_in(served) is None         # nothing left after it
