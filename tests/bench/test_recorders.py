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
