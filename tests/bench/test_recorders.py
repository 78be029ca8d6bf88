"""fakefs.bench.recorders: reading trace-cmd's output."""

from fakefs.bench.recorders import count_entries, events_lost

REPORT = b"""cpus=2
          <idle>-0     [000]     1.050000: function:             do_idle <-- cpu_startup_entry
           sleep-812   [001]     1.099999: function:             vfs_read <-- ksys_read
          <idle>-0     [000]     1.300001: function:             do_idle <-- cpu_startup_entry
CPU:1 [12 EVENTS DROPPED]
"""


def test_entries_are_counted_per_100_ms_with_the_empty_ones():
    n, bins = count_entries(REPORT.splitlines(keepends=True))
    assert n == 3
    assert bins == [2, 0, 0, 1]          # 1.0-1.1 s, 1.1, 1.2, 1.3-1.4


def test_the_events_lost_of_every_cpu_are_summed():
    out = "CPU0 data recorded at offset=0x119000\nCPU 0: 1305580 events lost\nCPU 1: 20 events lost\n"
    assert events_lost(out) == 1305600
    assert events_lost("no loss\n") == 0


def test_the_stream_parent_is_the_trace_cmd_below_the_sandbox_with_its_recorders():
    from fakefs.bench.recorders import stream_processes
    procs = {
        100: (1, "python3", "S"),            # the sandbox
        101: (100, "python3", "S"),          # its inner part
        102: (101, "trace-cmd", "S"),        # the parent
        103: (102, "trace-cmd", "S"),        # its recorders
        104: (102, "trace-cmd", "S"),
        200: (1, "trace-cmd", "S"),          # somebody else's stream
        201: (200, "trace-cmd", "S"),
        202: (200, "trace-cmd", "S"),
        300: (101, "trace-cmd", "Z"),        # a dead one under the sandbox
    }
    assert stream_processes(procs, 100) == (102, [103, 104])
    assert stream_processes(procs, 200) == (None, [])       # 200 is not below itself


def test_no_stream_parent_before_its_recorders_are_forked():
    from fakefs.bench.recorders import stream_processes
    procs = {100: (1, "python3", "S"), 102: (100, "trace-cmd", "S"), 103: (102, "trace-cmd", "S"),
             104: (102, "trace-cmd", "Z")}           # a recorder that died does not count
    assert stream_processes(procs, 100) == (None, [])
