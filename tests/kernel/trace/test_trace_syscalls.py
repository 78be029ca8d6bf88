"""System call events: the raw ones and one per call, as 6.12 prints them."""

from __future__ import annotations

from kfiles import rd, wr

from fakefs import sim
from fakefs.sim.clock import ManualClock



def _boot():
    return sim.boot(seed=3, nr_cpus=2, clock=ManualClock(), host_kallsyms=False)


def _run(k, ns):
    for _ in range(ns // 20_000_000):
        k.clock.advance(20_000_000)
        k.timekeeper.run_until_now()


def test_per_call_events_print_the_syscall_way():
    k = _boot()
    wr(k, "events/syscalls/sys_enter_read/enable", "1")
    wr(k, "events/syscalls/sys_exit_read/enable", "1")
    _run(k, 400_000_000)
    lines = [ln for ln in rd(k, "trace").splitlines() if not ln.startswith("#")]
    enters = [ln for ln in lines if "sys_read(" in ln]
    exits = [ln for ln in lines if "sys_read -> 0x" in ln]
    assert enters and exits
    body = enters[0].split(": ", 1)[1]
    assert body.startswith("sys_read(fd: ") and ", buf: " in body and ", count: " in body
    assert body.endswith(")") and "0x" not in body            # %lx, no 0x
    assert all(": sys_" in ln for ln in enters + exits)       # no "name:" prefix
    wr(k, "trace", "")
    wr(k, "options/verbose", "1")
    _run(k, 200_000_000)
    text = rd(k, "trace")
    assert "sys_read(unsigned int fd: " in text and "char * buf: " in text


def test_only_enabled_calls_are_recorded():
    k = _boot()
    wr(k, "events/syscalls/sys_enter_futex/enable", "1")
    wr(k, "events/raw_syscalls/sys_exit/enable", "1")
    _run(k, 300_000_000)
    lines = [ln for ln in rd(k, "trace").splitlines() if not ln.startswith("#")]
    names = {ln.split(": ", 2)[1].split("(")[0].split(":")[0] for ln in lines}
    assert names == {"sys_futex", "sys_exit"}
    raw = next(ln for ln in lines if "sys_exit: NR " in ln)
    assert raw.split("sys_exit: ")[1].split()[2] == "="


def test_raw_enter_shows_the_six_registers():
    k = _boot()
    wr(k, "events/raw_syscalls/sys_enter/enable", "1")
    _run(k, 200_000_000)
    raw = next(ln for ln in rd(k, "trace").splitlines() if "sys_enter: NR " in ln)
    regs = raw.split("(", 1)[1].rstrip(")").split(", ")
    assert len(regs) == 6 and all(int(r, 16) >= 0 for r in regs)


def test_no_syscall_is_simulated_while_nobody_traces_them():
    k = _boot()
    wr(k, "events/sched/sched_switch/enable", "1")
    assert not k.syscalls.traced()
    wr(k, "events/raw_syscalls/enable", "1")
    assert k.syscalls.traced()
    wr(k, "events/raw_syscalls/enable", "0")
    assert not k.syscalls.traced()


def test_the_stack_of_a_system_call_event_is_its_entry_or_exit_path():
    """With options/stacktrace, sys_enter's stack starts where the
    tracepoint is (syscall_trace_enter, from do_syscall_64), sys_exit's in
    syscall_exit_work: not wherever the task's walk happened to be."""
    k = _boot()
    wr(k, "events/raw_syscalls/enable", "1")
    wr(k, "events/syscalls/sys_enter_read/enable", "1")
    wr(k, "options/stacktrace", "1")
    _run(k, 60_000_000)
    lines = [ln for ln in rd(k, "trace").splitlines() if not ln.startswith("#")]
    seen = {"sys_enter": 0, "sys_exit": 0, "sys_read(": 0}
    want = {"sys_enter": "syscall_trace_enter", "sys_exit": "syscall_exit_work",
            "sys_read(": "syscall_trace_enter"}
    for i, ln in enumerate(lines[:-3]):
        if not lines[i + 1].endswith("<stack trace>"):
            continue
        for ev, site in want.items():
            if ": %s" % ev in ln:
                seen[ev] += 1
                assert lines[i + 2] == " => " + site, (ln, lines[i + 2])
                assert lines[i + 3] == " => do_syscall_64", (ln, lines[i + 3])
    assert all(n > 5 for n in seen.values()), seen
