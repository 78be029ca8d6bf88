"""tracing_thresh and tracing_max_latency (trace_latency_files.py)."""

import errno

from fakefs import sim
from fakefs.sim.clock import ManualClock
from kfiles import errno_of, node, rd, wr


def boot(cmdline=""):
    return sim.boot(cmdline=cmdline, clock=ManualClock(), host_kallsyms=False)


def test_values_in_microseconds_kept_as_nanoseconds():
    k = boot()
    assert node(k, "tracing_thresh").mode & 0o777 == 0o640
    assert node(k, "tracing_max_latency").mode & 0o777 == 0o640
    assert rd(k, "tracing_thresh") == "0\n" and rd(k, "tracing_max_latency") == "0\n"
    wr(k, "tracing_thresh", "150\n")
    assert rd(k, "tracing_thresh") == "150\n" and k.tracing.tracing_thresh == 150_000
    wr(k, "tracing_max_latency", "7")
    assert rd(k, "tracing_max_latency") == "7\n"
    assert errno_of(wr, k, "tracing_thresh", "0x10") == errno.EINVAL        # base 10
    assert errno_of(wr, k, "tracing_thresh", "-1") == errno.EINVAL
    assert errno_of(wr, k, "tracing_thresh", "18446744073709551616") == errno.ERANGE
    assert rd(k, "tracing_thresh") == "150\n"
    # the multiplication wraps as an unsigned long does
    wr(k, "tracing_max_latency", "18446744073709551615")
    assert rd(k, "tracing_max_latency") == "%d\n" % ((18446744073709551615 * 1000 % 2**64) // 1000)


def test_each_array_has_its_max_latency_and_the_top_level_the_threshold():
    k = boot("tracing_thresh=0x20")
    assert rd(k, "tracing_thresh") == "32\n"
    inst = k.tree.root.walk("sys/kernel/tracing/instances")
    inst.dops.mkdir(inst, "lat")
    assert k.tree.root.walk("sys/kernel/tracing/instances/lat/tracing_thresh") is None
    wr(k, "instances/lat/tracing_max_latency", "5")
    assert rd(k, "tracing_max_latency") == "0\n"
    assert rd(k, "instances/lat/tracing_max_latency") == "5\n"
