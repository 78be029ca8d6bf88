"""The simulated machine and its users, outside the kernel model.

``boot(...)`` gives a booted :class:`~fakefs.kernel.init.Kernel` whose time
a :class:`~fakefs.sim.timekeeper.Timekeeper` moves, driven by a
:class:`~fakefs.sim.machine.Machine`: what the daemon serves.
"""

from __future__ import annotations

from ..kernel.init import Kernel
from . import alloc_workload, function_calls, machine_init, profile_ticks, stack_calls, trace_activity, trace_backlog
from .clock import Clock
from .machine import Machine
from .timekeeper import Timekeeper


def keep_time(kernel: Kernel) -> Kernel:
    """``kernel``, with what moves it through time (``kernel.timekeeper``:
    one per kernel, made once) and what of the machine runs with it: its
    allocations (``kernel.alloc_workload``, where the kernel has the
    allocators), its timer ticks for the profiler, its calls for the
    function profiler and the stack tracer, its calls and events traced
    (``kernel.trace_activity``) and what of a gap tracing shows."""
    if kernel.timekeeper is None:
        Timekeeper(kernel)
        alloc_workload.start(kernel)
        profile_ticks.start(kernel)
        function_calls.start(kernel)
        stack_calls.start(kernel)
        trace_activity.start(kernel)
        trace_backlog.start(kernel)
    return kernel


def boot_kernel(kernel: Kernel, initcalls=None) -> Kernel:
    """``kernel`` booted on this machine (``initcalls``: those only; the
    machine's own at their places among them, ``init.MACHINE``:
    :mod:`.machine_init`), its time kept."""
    return keep_time(kernel.boot(initcalls, machine=machine_init))


def attach(kernel: Kernel) -> Machine:
    """Put a booted kernel on a machine that runs from the kernel's now."""
    keep_time(kernel)
    machine = Machine(kernel)
    kernel.driver = machine
    if machine.allocs is not None:        # what the allocators owe before a traced step
        kernel.timekeeper.debts.append(machine.allocs.pay_slice)
    hits = kernel.trace_hits
    if hits is not None:                  # what the real processes do is traced in a gap
        hits.traced_needs.append(machine.host.shown_in)
    machine.start(kernel.sim_time)
    return machine


def boot(initcalls=None, clock=None, **kwargs) -> Kernel:
    """``Kernel(**kwargs)`` on ``clock`` (default: the host's), booted
    (``initcalls``: those only), its time kept and, with a call graph, put
    on a machine."""
    kernel = boot_kernel(Kernel(clock=clock if clock is not None else Clock(), **kwargs), initcalls)
    if kernel.workload is not None:
        attach(kernel)
    return kernel
