"""The control files of a trace array (trace_files.py): the value already
set is taken and changes nothing, bad input gets the kernel's errno and
leaves the file as it was, a change shows."""

import errno
import os

import pytest

from fakefs import sim
from fakefs.kernel.fs.pseudo import File, KernelError
from fakefs.sim.clock import ManualClock
from kfiles import errno_of, node, rd, wr

MS = 1_000_000


@pytest.fixture(scope="module")
def k():
    return sim.boot(seed=3, nr_cpus=2, clock=ManualClock(), host_kallsyms=False)


@pytest.mark.parametrize("path,value,other", [
    ("tracing_on", "1", "0"),
    ("options/stacktrace", "0", "1"),
    ("options/func_stack_trace", "0", "1"),
    ("current_tracer", "nop", "function"),
    ("trace_options", "nostacktrace", "stacktrace"),
    ("events/enable", "0", "1"),
    ("events/sched/enable", "0", "1"),
    ("events/sched/sched_switch/enable", "0", "1"),
    ("events/sched/sched_switch/filter", "0", "prev_pid > 0"),
])
def test_a_write_of_the_value_set_changes_nothing(k, path, value, other):
    wr(k, path, value + "\n")
    shown = rd(k, path)
    k.clock.advance(5 * MS)
    assert wr(k, path, value + "\n") == len(value) + 1
    assert rd(k, path) == shown
    wr(k, path, other + "\n")
    assert rd(k, path) != shown
    wr(k, path, value + "\n")
    assert rd(k, path) == shown


@pytest.mark.parametrize("path,bad,err", [
    ("tracing_on", "x", errno.EINVAL),
    ("options/stacktrace", "2", errno.EINVAL),
    ("trace_options", "no_such_option", errno.EINVAL),
    ("current_tracer", "x" * 100, errno.EINVAL),
    ("events/enable", "2", errno.EINVAL),
    ("events/sched/sched_switch/enable", "-1", errno.EINVAL),
    ("events/sched/sched_switch/filter", "prev_pid >", errno.EINVAL),
    ("events/sched/sched_switch/trigger", "no_such_command", errno.EINVAL),
    ("set_event", "no_such_event", errno.EINVAL),
    ("buffer_size_kb", "0", errno.EINVAL),
    ("buffer_size_kb", "x", errno.EINVAL),
])
def test_bad_input_is_refused_and_changes_nothing(k, path, bad, err):
    shown = rd(k, path)
    assert errno_of(wr, k, path, bad) == err
    if not path.endswith("/filter"):           # (a filter file shows the parse error)
        assert rd(k, path) == shown


def test_set_event_appends_and_a_truncating_open_clears(k):
    ev = "sched:sched_wakeup"
    assert rd(k, "set_event") == ""
    assert wr(k, "set_event", "!" + ev) == len(ev) + 1               # already off
    wr(k, "set_event", ev, os.O_WRONLY | os.O_APPEND)
    assert rd(k, "set_event") == ev + "\n"
    wr(k, "set_event", "")
    assert rd(k, "set_event") == ""


def test_a_subsystem_filter_sets_and_removes_its_events_filters(k):
    tr = k.tracing.global_trace
    sched = [ev for ev in k.tracing.events if ev.system == "sched"]
    assert wr(k, "events/sched/filter", "0") == 1                    # no filters to remove
    wr(k, "events/sched/filter", "common_pid > 0")
    assert all(ev in tr.event_filters for ev in sched)
    wr(k, "events/sched/filter", "0")
    assert not any(ev in tr.event_filters for ev in sched)


# Written to tracing_cpumask of an instance of the host's tracefs (2 CPUs,
# mounted in a private namespace), each after "3": the errno (None: taken)
# and what the file reads back; the kernel's bitmap_parse_user() of each.
CPUMASK_ON_THE_HOST = [
    (b"3", None, "3"), (b"x00000001", None, "1"), (b"x00000003", None, "3"),
    (b"1x00000001", errno.EOVERFLOW, "3"), (b"000000001", errno.EOVERFLOW, "3"),
    (b"00000001", None, "1"), (b"1\x002", None, "1"), (b"\x00", None, "0"), (b"3\x00zz", None, "3"),
    (b"\x1c1", errno.EINVAL, "3"), (b"1\x1c", errno.EINVAL, "3"), (b"\xa01", None, "1"),
    (b"1\xa0", None, "1"), (b"\x851", errno.EINVAL, "3"), (b" ,, 1 ,, ", None, "1"),
    (b"1,", None, "1"), (b",1", None, "1"), (b"0,1", errno.EOVERFLOW, "3"), (b"1\n2", None, "1"),
    (b"\n1", None, "0"), (b"1 2", errno.EOVERFLOW, "3"), (b"ff", errno.EOVERFLOW, "3"),
    (b"+1", errno.EINVAL, "3"), (b"0x1", errno.EINVAL, "3"), (b"1\t", None, "1"),
    (b"\v\f\r1", None, "1"), (b"", errno.EINVAL, "3"), (b"1" * 9, errno.EOVERFLOW, "3"),
    (b"g", errno.EINVAL, "3"), (b"  ", None, "0")]


def test_tracing_cpumask_parses_as_the_kernel_does():
    k = sim.boot(seed=3, nr_cpus=2, clock=ManualClock(), host_kallsyms=False)
    k.tracing.instance_mkdir("m")
    path = "instances/m/tracing_cpumask"
    for data, err, after in CPUMASK_ON_THE_HOST:
        f = File(node(k, path), os.O_WRONLY | os.O_TRUNC)
        if err is None:
            assert f.node.fops.write(f, data) == len(data), data
        else:
            with pytest.raises(KernelError) as e:
                f.node.fops.write(f, data)
            assert e.value.errno == err, data
        assert rd(k, path) == after + "\n", data
        wr(k, path, "3")
    f = File(node(k, path), os.O_WRONLY)
    with pytest.raises(KernelError) as e:                  # more than kmalloc() gives: EINVAL
        f.node.fops.write(f, b" " * (4 << 20) + b" ")
    assert e.value.errno == errno.EINVAL
