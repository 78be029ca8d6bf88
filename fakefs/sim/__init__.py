"""The simulated machine and its users, outside the kernel model.

``boot(...)`` gives a booted :class:`~fakefs.kernel.init.Kernel` driven by a
:class:`~fakefs.sim.machine.Machine`: what the daemon serves.
"""

from __future__ import annotations

from ..kernel.init import Kernel
from .machine import Machine


def attach(kernel: Kernel) -> Machine:
    """Put a booted kernel on a machine that runs from the kernel's now."""
    machine = Machine(kernel)
    kernel.driver = machine
    act = kernel.trace_activity
    if act is not None:                   # what the real processes do is traced in a gap
        act.backlog.traced_needs.append(machine.host.shown_in)
    machine.start(kernel.sim_time)
    return machine


def boot(**kwargs) -> Kernel:
    """``Kernel(**kwargs)``, booted and put on a machine."""
    kernel = Kernel(**kwargs).boot()
    if kernel.workload is not None:
        attach(kernel)
    return kernel
