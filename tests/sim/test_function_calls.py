"""sim/function_calls.py: the machine's calls as the function profiler counts
them (its tables and files: tests/kernel/trace/test_ftrace_profile.py)."""

import random
import statistics

import pytest

from fakefs import sim
from fakefs.sim.clock import ManualClock
from fakefs.sim.files import read_file, write_file
from fakefs.sim.function_calls import FunctionCalls, poisson

T = "sys/kernel/tracing/"


@pytest.mark.parametrize("mean", [0.3, 4.0, 11.9, 12.0, 50.0, 3000.0])
def test_poisson(mean):
    rng = random.Random(1)
    xs = [poisson(rng, mean) for _ in range(20000)]
    assert min(xs) >= 0
    assert abs(statistics.fmean(xs) - mean) < 0.05 * mean + 0.02
    assert abs(statistics.pvariance(xs) - mean) < 0.08 * mean + 0.02


def test_drawn_times_keep_the_measured_spread():
    """n calls' summed time and squares (``_times``) give the kernel's
    variance (n * sum x^2 - (sum x)^2) / (n (n - 1)) around the measured one,
    and never 0 when the measured calls differ.  (The squares were n times
    the measured mean square, floored: a sum drawn above n * sqrt(mean^2 +
    var) gave 0, lesson 7's vfs_getattr of 14 hits: s^2 0.000 us.)"""
    rng = random.Random(4)
    mean, sd = 15_484.0, 6_455.0                 # ns: vfs_getattr's measured calls
    m = 9
    dur = [m, m * mean, m * (sd * sd + mean * mean)]
    for n in (2, 5, 14, 40):
        got = []
        for _ in range(400):
            time, sq = FunctionCalls._times(rng, dur, n)
            got.append((n * sq - time * time) / (n * (n - 1)))
        assert min(got) > 0, n
        assert abs(statistics.mean(got) / (sd * sd) - 1) < 0.15, n
    assert FunctionCalls._times(rng, [1, mean, mean * mean], 3) == (round(3 * mean),
                                                                       round(3 * mean * mean))


def test_the_profiler_counts_what_its_counter_counts():
    """Without the machine's counter nothing is counted; with it, the calls
    of the time the profiler was on, up to the machine's present."""
    k = sim.boot(seed=7, nr_cpus=2, clock=ManualClock(), host_kallsyms=False)
    prof = k.tracing.function_profiler
    assert isinstance(prof.counter, FunctionCalls)
    write_file(k, T + "function_profile_enabled", b"1")
    assert prof.counter.since == k.sim_time
    k.clock.advance(200_000_000)
    read_file(k, T + "trace_stat/function0")
    assert prof.counter.since == k.sim_time == 200_000_000
    assert sum(prof.stats[0].hits) > 0
    counter, prof.counter = prof.counter, None        # nothing calls: nothing counted
    k.clock.advance(200_000_000)
    hits = sum(prof.stats[0].hits)
    read_file(k, T + "trace_stat/function0")
    assert sum(prof.stats[0].hits) == hits
    prof.counter = counter
    read_file(k, T + "trace_stat/function0")
    assert sum(prof.stats[0].hits) > hits
