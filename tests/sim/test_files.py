"""sim/files.py: a read or write from outside a mount runs the machine to
the clock's now first; the kernel's file operations alone do not."""

from fakefs import sim
from fakefs.kernel.fs.pseudo import kernel_read, kernel_write
from fakefs.sim.clock import ManualClock
from fakefs.kernel.fs.pseudo import Later
from fakefs.sim.files import finish, read_file, write_file

T = "sys/kernel/tracing/"
MS = 1_000_000


def _booted():
    k = sim.boot(seed=2, nr_cpus=2, clock=ManualClock(), host_kallsyms=False)
    write_file(k, T + "events/sched/sched_switch/enable", b"1")
    return k


def test_a_read_sees_what_ran_up_to_the_clock():
    k = _booted()
    k.clock.advance(50 * MS)
    assert k.sim_time < 50 * MS
    alone = kernel_read(k.tree, T + "trace")          # the operation alone: nothing ran
    assert b"sched_switch:" not in alone and k.sim_time < 50 * MS
    text = read_file(k, T + "trace")
    assert k.sim_time > 49 * MS                       # (to the tick the clock is in)
    assert text.count(b"sched_switch:") > 10


def test_a_write_comes_after_what_ran_before_it():
    """What ran before the write was recorded under the old setting."""
    k = _booted()
    k.clock.advance(20 * MS)
    write_file(k, T + "tracing_on", b"0")
    seen = read_file(k, T + "trace").count(b"sched_switch:")
    assert seen > 5
    k.clock.advance(20 * MS)
    assert read_file(k, T + "trace").count(b"sched_switch:") == seen     # off since the write
    k2 = _booted()
    k2.clock.advance(20 * MS)
    kernel_write(k2.tree, T + "tracing_on", b"0")     # alone: off before anything ran
    assert read_file(k2, T + "trace").count(b"sched_switch:") == 0


def test_finish_moves_the_machine_where_each_later_says():
    k = _booted()
    seen = []

    def second():
        seen.append(k.sim_time)
        return "done"
    answer = Later(7 * MS, lambda: seen.append(k.sim_time) or Later(9 * MS + 5, second))
    assert finish(k, answer) == "done" and seen == [7 * MS, 9 * MS + 5]
    assert finish(k, 3) == 3
