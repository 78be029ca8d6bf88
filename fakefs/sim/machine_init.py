"""The machine's part of the kernel's boot (``init.MACHINE``: the places
among the initcalls ``Kernel.boot(machine=...)`` runs from this module;
``sim.boot_kernel`` gives it).

* ``workload_init``: what runs on the CPUs, the code the tasks go through
  and the tasks (:mod:`.workload`), which the kernel's later initcalls
  find as ``kernel.workload``;
* ``alloc_steady_init``: once the allocators are up and boot's state is
  in place, what the running system holds when somebody first looks
  (:mod:`.alloc_history`), and the allocation workload that goes on from
  it with the machine's time (:mod:`.alloc_workload`).
"""

from __future__ import annotations

from .alloc_history import steady_state
from .alloc_workload import AllocWorkload
from .workload import workload_init

__all__ = ["workload_init", "alloc_steady_init"]


def alloc_steady_init(kernel) -> None:
    calls = kernel.alloc_calls
    if calls is None:
        return                  # built without CONFIG_MEM_ALLOC_PROFILING
    wl = kernel.alloc_workload = AllocWorkload(kernel)
    steady_state(calls, wl.life)
