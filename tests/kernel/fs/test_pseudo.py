"""The kernel reading and writing its own pseudo-files."""

from __future__ import annotations

import errno

import pytest

from fakefs import sim
from fakefs.kernel.fs.pseudo import KernelError, kernel_read, kernel_write
from fakefs.kernel.time import ManualClock

T = "sys/kernel/tracing/"


@pytest.fixture(scope="module")
def k():
    return sim.boot(seed=1, nr_cpus=2, clock=ManualClock(), host_kallsyms=False)


def test_write_then_read_back(k):
    assert kernel_write(k.tree, T + "tracing_on", b"0\n") == 2
    assert kernel_read(k.tree, T + "tracing_on") == b"0\n"
    kernel_write(k.tree, T + "tracing_on", b"1\n")
    assert kernel_read(k.tree, T + "tracing_on", size=1) == b"1"


def test_errors_are_the_kernels(k):
    with pytest.raises(KernelError) as e:
        kernel_read(k.tree, T + "no_such_file")
    assert e.value.errno == errno.ENOENT
    with pytest.raises(KernelError) as e:
        kernel_read(k.tree, T + "events")
    assert e.value.errno == errno.EISDIR
    with pytest.raises(KernelError) as e:
        kernel_write(k.tree, T + "current_tracer", b"no_such_tracer\n")
    assert e.value.errno == errno.EINVAL


def test_files_are_released(k):
    k.tracing.instance_mkdir("held")
    kernel_read(k.tree, T + "instances/held/trace")
    k.tracing.instance_rmdir("held")            # EBUSY if the read kept it open
