"""The snapshot buffer (trace_snapshot.py): the snapshot files, swapping,
freeing and clearing, its pages, the per-CPU files, and the ``snapshot``
function probe."""

import errno
import os

import pytest

from fakefs import sim
from fakefs.kernel.fs.pseudo import File
from fakefs.sim.clock import ManualClock
from kfiles import errno_of, node, rd, wr

MS = 1_000_000
APPEND = os.O_WRONLY | os.O_APPEND
FREED_HELP = ("# tracer: nop\n#\n#\n# * Snapshot is freed *\n#\n# Snapshot commands:\n"
              "# echo 0 > snapshot : Clears and frees snapshot buffer\n"
              "# echo 1 > snapshot : Allocates snapshot buffer, if not already allocated.\n"
              "#                      Takes a snapshot of the main buffer.\n"
              "# echo 2 > snapshot : Clears snapshot buffer (but does not allocate or free)\n"
              "#                      (Doesn't have to be '2' works with any number that\n"
              "#                       is not a '0' or '1')\n")
PERCPU_TAIL = ("# echo 2 > snapshot : Clears this cpu's snapshot buffer (but does not allocate)\n"
               "#                      (Doesn't have to be '2' works with any number that\n"
               "#                       is not a '0' or '1')\n")


def boot(**overrides):
    return sim.boot(seed=7, nr_cpus=2, clock=ManualClock(), host_kallsyms=False,
                    config_overrides=overrides or None)


@pytest.fixture(scope="module")
def booted():
    return boot()


@pytest.fixture
def k(booted):
    k = booted
    yield k
    if "snapshot" in rd(k, "set_ftrace_filter"):
        wr(k, "set_ftrace_filter", "!schedule:snapshot\n", APPEND)
    for inst in list(k.tracing.instances):
        k.tracing.instance_rmdir(inst)
    wr(k, "snapshot", "0\n")
    wr(k, "tracing_on", "1\n")
    wr(k, "trace", "")
    wr(k, "buffer_size_kb", "1408\n")


def marks(k, path):
    return [ln.split(": ", 2)[-1] for ln in rd(k, path).splitlines() if not ln.startswith("#")]


def test_files_and_modes(k):
    assert node(k, "snapshot").mode & 0o777 == 0o640
    assert node(k, "per_cpu/cpu1/snapshot").mode & 0o777 == 0o640
    k.tracing.instance_mkdir("foo")
    assert node(k, "instances/foo/snapshot") is not None
    assert node(k, "instances/foo/per_cpu/cpu0/snapshot") is not None


def test_no_snapshot_without_the_config():
    # (the latency tracers select it)
    k = boot(TRACER_SNAPSHOT=False, IRQSOFF_TRACER=False, PREEMPT_TRACER=False, SCHED_TRACER=False)
    root = k.tree.root.walk("sys/kernel/tracing")
    assert "snapshot" not in root.children
    assert "snapshot" not in root.walk("per_cpu/cpu0").children
    assert "snapshot" not in rd(k, "README")
    assert errno_of(wr, k, "set_ftrace_filter", "schedule:snapshot\n") == errno.EINVAL


def test_help_while_empty(k):
    assert rd(k, "snapshot") == FREED_HELP
    wr(k, "snapshot", "1\n")
    assert rd(k, "snapshot") == FREED_HELP.replace("freed", "allocated")
    assert rd(k, "per_cpu/cpu1/snapshot") == (
        "# tracer: nop\n#\n#\n# * Snapshot is allocated *\n#\n# Snapshot commands:\n"
        "# echo 0 > snapshot : Invalid for per_cpu snapshot file.\n"
        "# echo 1 > snapshot : Allocates snapshot buffer, if not already allocated.\n"
        "#                      Takes a snapshot of the main buffer for this cpu.\n"
        + PERCPU_TAIL)


def test_percpu_help_without_swap():
    k = boot(TRACER_SNAPSHOT_PER_CPU_SWAP=False, IRQSOFF_TRACER=False, PREEMPT_TRACER=False)
    assert rd(k, "per_cpu/cpu0/snapshot").endswith(
        "# echo 0 > snapshot : Invalid for per_cpu snapshot file.\n"
        "# echo 1 > snapshot : Not supported with this kernel.\n"
        "#                     Must use main snapshot file to allocate.\n" + PERCPU_TAIL)
    assert errno_of(wr, k, "per_cpu/cpu0/snapshot", "1\n") == errno.EINVAL


def test_swap_keeps_tracing_on_as_it_was(k):
    """00basic/snapshot.tc"""
    wr(k, "tracing_on", "0\n")
    wr(k, "snapshot", "1\n")
    assert "Snapshot is allocated" in rd(k, "snapshot")
    assert rd(k, "tracing_on") == "0\n"
    wr(k, "tracing_on", "1\n")
    wr(k, "snapshot", "1\n")
    assert rd(k, "tracing_on") == "1\n"


def test_swap_moves_the_entries(k):
    wr(k, "trace_marker", "one\n")
    wr(k, "snapshot", "1\n")
    assert marks(k, "snapshot") == ["one"]
    assert marks(k, "trace") == []
    text = rd(k, "snapshot")
    assert "# entries-in-buffer/entries-written: 1/1   #P:2\n" in text
    assert "Snapshot is" not in text
    wr(k, "trace_marker", "two\n")
    wr(k, "snapshot", "1\n")
    assert marks(k, "snapshot") == ["two"] and marks(k, "trace") == ["one"]
    wr(k, "snapshot", "2\n")                        # clears, stays allocated
    assert "Snapshot is allocated" in rd(k, "snapshot")
    assert marks(k, "trace") == ["one"]
    wr(k, "snapshot", "0\n")
    assert rd(k, "snapshot") == FREED_HELP
    assert marks(k, "trace") == ["one"]


def test_write_errors(k):
    for bad in ("\n", "abc\n", "-1\n", "0x1\n"):
        assert errno_of(wr, k, "snapshot", bad) == errno.EINVAL, bad
    assert errno_of(wr, k, "snapshot", "18446744073709551616\n") == errno.ERANGE
    assert errno_of(wr, k, "per_cpu/cpu0/snapshot", "0\n") == errno.EINVAL
    assert not k.tracing.global_trace.allocated_snapshot
    wr(k, "snapshot", "5\n")                        # clearing a freed one: nothing
    assert not k.tracing.global_trace.allocated_snapshot


def test_percpu_swap(k):
    wr(k, "trace_marker", "cpu0\n")                 # marker writes come on CPU 0 here
    wr(k, "per_cpu/cpu1/snapshot", "1\n")            # allocates, swaps CPU 1 only
    assert k.tracing.global_trace.allocated_snapshot
    assert marks(k, "trace") == ["cpu0"]
    wr(k, "per_cpu/cpu0/snapshot", "1\n")
    assert marks(k, "trace") == [] and marks(k, "snapshot") == ["cpu0"]
    assert marks(k, "per_cpu/cpu0/snapshot") == ["cpu0"]
    assert "Snapshot is allocated" in rd(k, "per_cpu/cpu1/snapshot")
    wr(k, "per_cpu/cpu0/snapshot", "2\n")
    assert marks(k, "snapshot") == []
    # with tracing off the per-CPU swap does nothing (ring_buffer_swap_cpu: -EAGAIN)
    wr(k, "trace_marker", "again\n")
    wr(k, "tracing_on", "0\n")
    wr(k, "per_cpu/cpu0/snapshot", "1\n")
    assert marks(k, "trace") == ["again"]


def test_pages_from_memory(k):
    k.tracing.global_trace.ensure_expanded()        # (alone, the boot-time buffer is not yet)
    mem = k.tracing.buffer_memory()
    before = mem.available_pages()
    wr(k, "snapshot", "1\n")
    per_cpu = k.tracing.global_trace.buffer.cpus[0].nr_pages
    assert before - mem.available_pages() == 2 * (per_cpu - 2)
    wr(k, "buffer_size_kb", "4096\n")               # the snapshot follows the size
    tr = k.tracing.global_trace
    assert [cb.nr_pages for cb in tr.max_buffer.cpus] == [cb.nr_pages for cb in tr.buffer.cpus]
    wr(k, "per_cpu/cpu1/buffer_size_kb", "8\n")
    assert tr.max_buffer.cpus[1].nr_pages == tr.buffer.cpus[1].nr_pages == 3
    wr(k, "buffer_size_kb", "1408\n")
    wr(k, "snapshot", "0\n")
    assert mem.available_pages() == before


def test_enomem_leaves_it_freed(k):
    mem = k.tracing.buffer_memory()
    tr = k.tracing.global_trace
    hog = mem.available_pages() - 10
    mem.charge(hog)
    try:
        assert errno_of(wr, k, "snapshot", "1\n") == errno.ENOMEM
        assert not tr.allocated_snapshot
        assert rd(k, "snapshot") == FREED_HELP
    finally:
        mem.uncharge(hog)
    wr(k, "snapshot", "1\n")
    hog = mem.available_pages() - 10
    mem.charge(hog)
    try:
        # the snapshot cannot follow: the main buffer goes back to its size
        old = [cb.nr_pages for cb in tr.buffer.cpus]
        assert errno_of(wr, k, "buffer_size_kb", "2048\n") == errno.ENOMEM
        assert [cb.nr_pages for cb in tr.buffer.cpus] == old
    finally:
        mem.uncharge(hog)


def test_instance_rmdir_gives_pages_back(k):
    mem = k.tracing.buffer_memory()
    before = mem.available_pages()
    k.tracing.instance_mkdir("foo")
    wr(k, "instances/foo/snapshot", "1\n")
    wr(k, "instances/foo/trace_marker", "inst\n")
    wr(k, "instances/foo/snapshot", "1\n")
    assert marks(k, "instances/foo/snapshot") == ["inst"]
    assert not k.tracing.global_trace.allocated_snapshot
    k.tracing.instance_rmdir("foo")
    assert mem.available_pages() == before


def test_paused_reader_stops_the_swap(k):
    wr(k, "options/pause-on-trace", "1\n")
    try:
        wr(k, "trace_marker", "kept\n")
        n = node(k, "trace")
        f = File(n, os.O_RDONLY)
        n.fops.open(f)
        try:
            wr(k, "snapshot", "1\n")                # allocated, not swapped
            assert k.tracing.global_trace.allocated_snapshot
            assert "Snapshot is allocated" in rd(k, "snapshot")
        finally:
            n.fops.release(f)
        assert marks(k, "trace") == ["kept"]
    finally:
        wr(k, "options/pause-on-trace", "0\n")


def test_snapshot1_cpumask(k):
    """00basic/snapshot1.tc"""
    wr(k, "tracing_cpumask", "0\n")
    wr(k, "snapshot", "1\n")
    wr(k, "tracing_cpumask", "3\n")
    wr(k, "tracing_on", "1\n")
    wr(k, "trace_marker", "test input 1\n")
    assert "test input 1" in rd(k, "trace")


def test_readme(k):
    text = rd(k, "README")
    assert ("\n  snapshot\t\t- Like 'trace' but shows the content of the static\n"
            "\t\t\t  snapshot buffer. Read the contents for more\n"
            "\t\t\t  information\n") in text
    assert "\t\t      stacktrace\n\t\t      snapshot\n\t\t      dump\n" in text
    assert "\t\t    stacktrace\n\t\t    snapshot\n\t\t    hist (see below)\n\t   example: echo traceoff" in text


def test_function_probe(k):
    wr(k, "set_ftrace_filter", "schedule:snapshot:1\n", APPEND)
    tr = k.tracing.global_trace
    assert tr.allocated_snapshot and tr.snapshot_arms == 1
    assert rd(k, "set_ftrace_filter").splitlines()[1:] == ["schedule:snapshot:count=1"]
    wr(k, "trace_marker", "before\n")
    k.clock.advance(200 * MS)                       # schedule() is called: one swap
    assert rd(k, "set_ftrace_filter").splitlines()[1:] == ["schedule:snapshot:count=0"]
    assert marks(k, "snapshot") == ["before"]
    wr(k, "set_ftrace_filter", "!schedule:snapshot:0\n", APPEND)
    assert tr.snapshot_arms == 0
    assert rd(k, "set_ftrace_filter") == "#### all functions enabled ####\n"


def test_probe_on_a_freed_snapshot_stops_tracing(k):
    wr(k, "set_ftrace_filter", "schedule:snapshot\n", APPEND)
    wr(k, "snapshot", "0\n")                        # frees it under the probe
    k.clock.advance(50 * MS)
    assert rd(k, "tracing_on") == "0\n"
    text = rd(k, "trace")
    assert ": *** SNAPSHOT NOT ALLOCATED ***\n" in text
    assert ": *** stopping trace here!   ***\n" in text
    wr(k, "set_ftrace_filter", "!schedule:snapshot\n", APPEND)


def test_an_open_snapshot_reader_makes_resizes_busy(k):
    """A reader of ``snapshot`` pins the snapshot buffer's CPUs (its
    ``ring_buffer_read_start()``): the main buffer would follow a resize,
    the snapshot cannot, so the main one goes back and it is EBUSY."""
    tr = k.tracing.global_trace
    wr(k, "snapshot", "1\n")
    old = [cb.nr_pages for cb in tr.buffer.cpus]
    n = node(k, "snapshot")
    f = File(n, os.O_RDONLY)
    n.fops.open(f)
    try:
        assert errno_of(wr, k, "buffer_size_kb", "2048\n") == errno.EBUSY
        assert [cb.nr_pages for cb in tr.buffer.cpus] == old
        assert errno_of(wr, k, "buffer_subbuf_size_kb", "8\n") == errno.EBUSY
        assert rd(k, "buffer_subbuf_size_kb") == "4\n"
        wr(k, "snapshot", "1\n")                    # same sizes: swapped, no resize
    finally:
        n.fops.release(f)
    wr(k, "buffer_size_kb", "2048\n")
    assert [cb.nr_pages for cb in tr.max_buffer.cpus] == [cb.nr_pages for cb in tr.buffer.cpus]
