"""The kernel reading and writing its own pseudo-files."""

from __future__ import annotations

import errno

import pytest

from fakefs import sim
from fakefs.kernel.fs.pseudo import KernelError
from fakefs.sim.files import read_file, write_file
from fakefs.sim.clock import ManualClock

T = "sys/kernel/tracing/"


@pytest.fixture(scope="module")
def k():
    return sim.boot(seed=1, nr_cpus=2, clock=ManualClock(), host_kallsyms=False)


def test_write_then_read_back(k):
    assert write_file(k, T + "tracing_on", b"0\n") == 2
    assert read_file(k, T + "tracing_on") == b"0\n"
    write_file(k, T + "tracing_on", b"1\n")
    assert read_file(k, T + "tracing_on", size=1) == b"1"


def test_errors_are_the_kernels(k):
    with pytest.raises(KernelError) as e:
        read_file(k, T + "no_such_file")
    assert e.value.errno == errno.ENOENT
    with pytest.raises(KernelError) as e:
        read_file(k, T + "events")
    assert e.value.errno == errno.EISDIR
    with pytest.raises(KernelError) as e:
        write_file(k, T + "current_tracer", b"no_such_tracer\n")
    assert e.value.errno == errno.EINVAL


def test_files_are_released(k):
    k.tracing.instance_mkdir("held")
    read_file(k, T + "instances/held/trace")
    k.tracing.instance_rmdir("held")            # EBUSY if the read kept it open


def test_later_waits_only_for_an_instant_not_reached_and_after_that_chains():
    from fakefs.kernel.fs.pseudo import Later, after_that, later

    class K:
        sim_time = 10
    assert later(K, 10, lambda: "now") == "now"                 # reached: at once
    wait = later(K, 11, lambda: "then")
    assert isinstance(wait, Later) and wait.t == 11 and wait.then() == "then"
    chained = after_that(wait, lambda: 5)                      # then() first, then 5
    assert isinstance(chained, Later) and chained.t == 11 and chained.then() == 5
    assert after_that(None, lambda: 7) == 7
