"""The machine's tracepoint hits as the arrays see them (trace_machine_hits.py):
a system call's work is the calls a filtered function tracer or a probe
waits for."""

import pytest

from fakefs.kernel.entry_common import SYSCALL_WORK, syscall_nr, syscall_work
from fakefs.sim.files import write_file
from fakefs.kernel.trace.trace_events_commit import COMMITTED

from hostlib import MS, T, boot, fork_exec_exit, lines, run


def machine():
    return boot(always_seen=False)


def perf_runs_sleep(k, m):
    """perf (pid 5000, followed) forks 5001, which execs sleep and exits."""
    run(k, 0.04)
    fork_exec_exit(k, m, comm="perf", lives=4 * MS)
    run(k, 0.06)


def test_a_system_call_s_work_goes_through_its_function():
    assert syscall_work(syscall_nr("read")) == ("__x64_sys_read", "ksys_read", "vfs_read")
    assert syscall_work(syscall_nr("getpid")) == ("__x64_sys_getpid",)
    assert syscall_work(100000) == ()
    k, _m = machine()
    for name in SYSCALL_WORK:                     # x86-64 calls, functions the walk has
        assert syscall_nr(name) >= 0
        assert all(f in k.workload.wg.ids for f in syscall_work(syscall_nr(name))), name


@pytest.mark.parametrize("events", [True, False])
def test_a_filter_on_vfs_read_sees_the_reads_of_a_followed_sleep(events):
    """perf ftrace -T vfs_read -- sleep 1: the filtered function tracer,
    limited to the command's pid, shows the vfs_read() calls of its
    loader's read() and pread64()s, each at its sys_enter, in its task."""
    k, m = machine()
    settings = [("set_ftrace_filter", "vfs_read"), ("set_ftrace_pid", "5001"),
                ("current_tracer", "function")]
    if events:                      # (the calls are made for the filter alone too)
        settings += [("events/raw_syscalls/sys_enter/enable", "1"), ("set_event_pid", "5001")]
    for path, value in settings:
        write_file(k, T + path, value.encode())
    perf_runs_sleep(k, m)
    got = lines(k)
    calls = [ln for ln in got if " vfs_read <-" in ln]
    assert calls and all(ln.lstrip().startswith("sleep-5001 ") for ln in calls), got
    froms = [ln.split("<-")[1].strip() for ln in calls]
    assert froms.count("ksys_read") >= 1 and froms.count("ksys_pread64") == 2, calls
    if not events:
        return
    reads = [ln for ln in got if "sys_enter: NR 0 " in ln or "sys_enter: NR 17 " in ln]
    assert len(reads) == 3                                 # read, pread64, pread64
    # each of them goes through vfs_read() (a read()'s from ksys_read(), a
    # pread64()'s from ksys_pread64()) at its entry; (any other call is
    # the filtered tracer's stream of the walk's, as for any task)
    stamp = lambda ln: ln.split(": ", 1)[0].split()[-1]
    at_reads = [ln for ln in calls if stamp(ln) in {stamp(r) for r in reads}]
    assert {stamp(ln) for ln in at_reads} == {stamp(ln) for ln in reads}
    assert {ln.split("<-")[1].strip() for ln in at_reads} == {"ksys_read", "ksys_pread64"}
    # nothing else of the machine's: the pid filter holds
    assert not [ln for ln in got if "sleep-5001" not in ln]


def test_work_is_wanted_by_a_filter_at_once():
    """With the function tracer unfiltered, its calls are the walk's; a
    filter makes the real processes' known calls its calls at once."""
    k, _m = machine()
    write_file(k, T + "current_tracer", b"function")
    run(k, 0.02)
    assert not k.syscalls.work_wanted()
    write_file(k, T + "set_ftrace_filter", b"vfs_read")
    assert k.syscalls.work_wanted() and not k.syscalls.traced()     # at once


def test_function_graph_sees_the_loader_s_reads_of_a_followed_sleep():
    """perf ftrace -G vfs_read -- sleep 1: the graph of each vfs_read() the
    loader's read() and pread64()s make, in sleep's task."""
    k, m = machine()
    for path, value in (("set_graph_function", "vfs_read"), ("set_ftrace_pid", "5001"),
                        ("options/funcgraph-proc", "1"), ("current_tracer", "function_graph")):
        write_file(k, T + path, value.encode())
    perf_runs_sleep(k, m)
    reads = [ln for ln in lines(k) if "vfs_read()" in ln or "vfs_read();" in ln]
    assert len(reads) >= 3 and all("sleep-5001" in ln for ln in reads), lines(k)


def _files_after(monkeypatch, seed, settings, windows, window_ns):
    """Boot (``seed``), write ``settings``, run ``windows`` windows: the
    trace, the CPUs' stats and the saved comms and tgids (then the
    monkeypatches made before are undone)."""
    from kfiles import rd, wr

    from fakefs import sim
    from fakefs.sim.clock import ManualClock
    k = sim.boot(seed=seed, nr_cpus=2, clock=ManualClock(), host_kallsyms=False)
    for path, value in settings:
        wr(k, path, value)
    for _ in range(windows):
        k.clock.advance(window_ns)
        k.timekeeper.run_until_now()
    out = [rd(k, "trace"), rd(k, "per_cpu/cpu0/stats"), rd(k, "per_cpu/cpu1/stats"),
           rd(k, "saved_cmdlines"), rd(k, "saved_tgids")]
    monkeypatch.undo()
    return out


def _every_event(monkeypatch, fast, settings):
    from fakefs.sim import trace_machine_hits
    if not fast:
        monkeypatch.setattr(trace_machine_hits, "commit_way", lambda tr, ev: COMMITTED)
    return _files_after(monkeypatch, 7, settings, 4, 25_000_000)


@pytest.mark.parametrize("settings", [
    [("events/enable", "1")],
    [("events/enable", "1"), ("options/record-tgid", "1"), ("trace_clock", "global")],
    [("events/enable", "1"), ("events/sched/sched_switch/filter", "prev_pid != 0"),
     ("events/kmem/filter", "bytes_req > 64")],
    [("events/enable", "1"), ("options/stacktrace", "1"), ("options/stackmap", "1")],
    [("events/enable", "1"), ("options/stacktrace", "1"), ("options/userstacktrace", "1"),
     ("options/sym-userobj", "1")],
    [("events/enable", "1"), ("events/kmem/kmalloc/trigger", "stacktrace:3"),
     ("events/sched/sched_wakeup/enable", "0")],
    # (the function tracer's calls between the hits: ``HitWriter.write_from``
    # stops at the next call's instant)
    [("current_tracer", "function"), ("events/enable", "1")],
])
def test_hits_just_written_are_what_the_commit_path_writes(monkeypatch, settings):
    """An event whose every array just writes it, or writes it and its
    stack (``commit_way``: PLAIN, AFTER), is written without the rest of
    the commit path: byte for byte the files the commit path gives, and
    where an array filters or triggers the commit path still runs."""
    fast = _every_event(monkeypatch, True, settings)
    assert fast == _every_event(monkeypatch, False, settings)
    assert fast[0].count("\n") > 1000


# (a trigger last: while one may act on its array nothing is kept across
# windows; those after the first line's are what a commit reads of its array:
# ``Committer``)
CHANGES = [("events/sched/sched_switch/enable", "0"), ("events/sched/sched_switch/enable", "1"),
           ("events/sched/sched_wakeup/filter", "pid < 100"), ("tracing_cpumask", "1"),
           ("options/stacktrace", "1"), ("options/stackmap", "1"), ("tracing_cpumask", "3"),
           ("events/sched/sched_wakeup/filter", "0"), ("options/stackmap", "0"),
           ("options/stacktrace", "0"), ("options/overwrite", "0"), ("buffer_size_kb", "8"),
           ("options/overwrite", "1"), ("tracing_on", "0"), ("tracing_on", "1"),
           ("options/record-tgid", "1"), ("trace_clock", "global"), ("trace_clock", "local"),
           ("buffer_size_kb", "1408"),
           ("events/kmem/enable", "0"), ("events/sched/sched_switch/trigger", "hist:keys=next_pid")]


def _changing(monkeypatch, kept):
    """Every event on, then a setting changed between each two windows;
    ``kept``: the recorders live across windows while their key holds,
    and the commits are read again at each window (else both are made
    again each window)."""
    from kfiles import rd, wr

    from fakefs import sim
    from fakefs.sim.clock import ManualClock
    from fakefs.sim import trace_activity
    if not kept:
        monkeypatch.setattr(trace_activity, "recorders_key", lambda trs: object())
        monkeypatch.setattr(trace_activity, "reread_committers", dict.clear)
    k = sim.boot(seed=9, nr_cpus=2, clock=ManualClock(), host_kallsyms=False)
    wr(k, "events/enable", "1")
    for path, value in [(None, None)] + CHANGES:
        if path is not None:
            wr(k, path, value)
        for _ in range(3):                     # a few windows with each setting
            k.clock.advance(4_000_000)
            k.timekeeper.run_until_now()
    out = [rd(k, "trace"), rd(k, "per_cpu/cpu0/stats"), rd(k, "per_cpu/cpu1/stats"),
           rd(k, "events/sched/sched_switch/hist")]
    monkeypatch.undo()
    return out


def test_recorders_kept_across_windows_follow_every_setting_they_depend_on(monkeypatch):
    """The recorders of the machine's hits are made once for the arrays'
    settings (``recorders_key``), their commits read the arrays again at
    each window: enabling, disabling, a filter, a trigger, tracing_cpumask,
    the stack options, overwrite, the buffer's size, tracing_on, tgids and
    the clock between windows give byte for byte the files of recorders
    and commits made again at every window (a hist trigger's too)."""
    kept = _changing(monkeypatch, True)
    assert kept == _changing(monkeypatch, False)
    assert kept[0].count("\n") > 1000 and "=> " in kept[0] and "next_pid:" in kept[3]


class _PythonSwitchCalls:
    """A window's compiled replay that leaves every switch whose calls a
    function array takes to the Python path (``_machine_hit``)."""

    def __init__(self, real):
        self.real = real

    def write(self, hit, cpu, calls=True):
        return self.real.write(hit, cpu, calls if calls is False else True)

    def write_from(self, occ, i, cpu, calls, stop):
        return self.real.write_from(occ, i, cpu, calls if calls is False else True, stop)


def _switch_calls(monkeypatch, compiled, settings):
    from fakefs.sim import trace_activity
    if not compiled:
        real = trace_activity.HitWriter
        monkeypatch.setattr(trace_activity, "HitWriter",
                            lambda *a: _PythonSwitchCalls(real(*a)))
    return _files_after(monkeypatch, 11, settings, 5, 9_000_000)


@pytest.mark.parametrize("settings", [
    [("current_tracer", "function")],
    [("current_tracer", "function"), ("events/sched/sched_switch/enable", "1"),
     ("options/stacktrace", "1"), ("options/stackmap", "1")],
    [("buffer_size_kb", "64"), ("options/overwrite", "0"), ("current_tracer", "function"),
     ("events/enable", "1")],
    [("current_tracer", "function"), ("tracing_cpumask", "1")],
])
def test_a_switch_s_calls_written_compiled_are_the_python_path_s(monkeypatch, settings):
    """A switch whose calls (schedule(), __schedule() ...) only a function
    tracer's compiled writer takes is replayed compiled (``HitWriter
    ._switch`` with ``TraceActivity._entered_writer``): byte for byte the
    files of the Python path (``_machine_hit`` -> ``_entered_calls``)."""
    fast = _switch_calls(monkeypatch, True, settings)
    assert fast == _switch_calls(monkeypatch, False, settings)
    assert "schedule <-" in fast[0] and fast[0].count("\n") > 1000

