"""sim/stack_calls.py: the machine's calls as the stack tracer measures them
(the tracer and its files: tests/kernel/trace/test_trace_stack.py)."""

from fakefs import sim
from fakefs.sim.clock import ManualClock
from fakefs.sim.files import read_file, write_file
from fakefs.sim.stack_calls import StackCalls

T = "sys/kernel/tracing/"


def boot(cmdline=""):
    clock = ManualClock(5_000_000)
    return sim.boot(seed=9, nr_cpus=2, clock=clock, host_kallsyms=False, cmdline=cmdline)


def test_registered_at_boot_it_measures_from_the_machines_start():
    k = boot("stacktrace")
    calls = k.stack_tracer.counter
    assert isinstance(calls, StackCalls) and k.stack_tracer.registered
    assert calls.since == k.sim_time == 5_000_000
    k.clock.advance(100_000_000)
    assert int(read_file(k, T + "stack_max_size")) > 0
    assert calls.since == k.sim_time


def test_unregistered_nothing_is_measured_and_the_look_moves_on():
    k = boot()
    st = k.stack_tracer
    k.clock.advance(100_000_000)
    assert read_file(k, T + "stack_max_size") == b"0\n"
    assert st.counter.since == k.sim_time          # nothing owed for the time it was off
    write_file(k, "proc/sys/kernel/stack_tracer_enabled", b"1")
    k.clock.advance(100_000_000)
    assert int(read_file(k, T + "stack_max_size")) > 0
