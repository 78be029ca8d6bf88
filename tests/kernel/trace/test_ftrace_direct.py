"""register_ftrace_direct() and its unregistering (ftrace_direct.py); what
enabled_functions shows of it is tested with the sample modules
(tests/kernel/test_samples_ftrace_direct.py)."""

import errno

import pytest

from fakefs import sim
from fakefs.kernel.fs.pseudo import KernelError
from fakefs.sim.clock import ManualClock
from fakefs.kernel.trace.ftrace_direct import (DirectOps, direct_functions, register_ftrace_direct,
                                               unregister_ftrace_direct)


@pytest.fixture
def k():
    return sim.boot(seed=7, nr_cpus=2, clock=ManualClock(), host_kallsyms=False)


def test_one_direct_trampoline_a_function(k):
    func = k.kallsyms.addr_of("wake_up_process")
    a, b = DirectOps((func,), lambda *a: None), DirectOps((func,), lambda *a: None)
    register_ftrace_direct(k, a, 0x1000)
    with pytest.raises(KernelError) as e:
        register_ftrace_direct(k, b, 0x2000)
    assert direct_functions(k) == {func: 0x1000}
    assert e.value.errno == errno.EBUSY
    with pytest.raises(KernelError) as e:
        register_ftrace_direct(k, DirectOps((), None), 0x2000)
    assert e.value.errno == errno.EINVAL
    with pytest.raises(KernelError):
        unregister_ftrace_direct(k, a, 0x2000)          # not its trampoline
    unregister_ftrace_direct(k, a, 0x1000)
    register_ftrace_direct(k, b, 0x2000)
    assert direct_functions(k) == {func: 0x2000}
    assert direct_functions(k) == {func: 0x2000}
