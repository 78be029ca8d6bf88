"""Booting (kernel/init.py): the initcalls in order, and the machine's part
of boot at its places among them (``init.MACHINE``)."""

from __future__ import annotations

import types

from fakefs.kernel.init import ALLOC_INITCALLS, INITCALLS, MACHINE, Kernel
from fakefs.sim.clock import ManualClock


def _kernel():
    return Kernel(seed=1, nr_cpus=1, clock=ManualClock(), host_kallsyms=False)


def test_the_machine_s_initcalls_run_at_their_places_from_the_module_given():
    seen = []
    calls = [("fakefs.kernel.kallsyms", "kallsyms_init"), (MACHINE, "first"),
             ("fakefs.kernel.version", "proc_version_init"), (MACHINE, "second")]
    machine = types.SimpleNamespace(
        first=lambda k: seen.append(("first", k.kallsyms is not None, k.tree.root.walk("proc/version"))),
        second=lambda k: seen.append(("second", k.tree.root.walk("proc/version") is not None)),
        register_params=lambda k: seen.append("params"))
    _kernel().boot(calls, machine=machine)
    # (its boot parameters registered with the kernel's, once, before any initcall)
    assert seen == ["params", ("first", True, None), ("second", True)]


def test_a_kernel_booted_without_a_machine_has_none_of_its_parts():
    k = _kernel().boot([("fakefs.kernel.kallsyms", "kallsyms_init"), *ALLOC_INITCALLS])
    assert k.workload is None and k.alloc_workload is None
    assert k.alloc_calls is not None                  # (the kernel's own allocators are up)


def test_the_machine_s_places_are_before_what_reads_them():
    names = [(m, f) for m, f in INITCALLS]
    walk = names.index((MACHINE, "workload_init"))
    assert walk < names.index(("fakefs.kernel.kprobes", "kprobes_init"))
    assert walk < names.index(("fakefs.kernel.trace.trace_init", "tracer_init_tracefs"))
    steady = names.index((MACHINE, "alloc_steady_init"))
    assert (names.index(("fakefs.kernel.mm.alloc_boot", "alloc_boot_init")) < steady
            < names.index(("fakefs.kernel.mm.alloc_boot", "alloc_late_init")))
    # every machine place names a function of the machine's module
    from fakefs.sim import machine_init
    assert all(hasattr(machine_init, f) for m, f in INITCALLS if m == MACHINE)
