"""When and on which CPU the allocation workload's operations happen when
the machine does not make them (:mod:`.alloc_workload`'s bulk steps).

The machine makes them as its own events while the allocators are traced
(:mod:`.alloc_arrivals`).  What is left here: owed time, simulated
untraced (an instant of the step only, for the objects' lifetimes), and a
traced step of a kernel without a machine: an instant drawn uniformly over
the step, on a CPU drawn at random (an offline one does nothing), or an
expiry's own instant.

Draws come from the kernel's ``alloc_workload-moments`` RNG.
"""

from __future__ import annotations


class Moments:
    """The instants of one workload's operations: ``begin()`` a step,
    ``draw()`` for each operation, ``end()``."""

    __slots__ = ("rng", "trace", "nr_cpus", "hp", "window")

    def __init__(self, kernel, trace):
        self.rng = kernel.subsystem_rng("alloc_workload-moments")
        self.trace = trace
        self.nr_cpus = kernel.nr_cpus
        self.hp = kernel.cpuhp
        self.window = None                   # (workload time, kernel time, span) of the step

    def begin(self, base: int, k0: int | None, span: int) -> None:
        """A step: workload time ``base`` is kernel time ``k0`` (None: owed
        time, simulated untraced), for ``span`` ns."""
        self.window = (base, k0, span)

    def end(self) -> None:
        self.window = None
        self.trace.when = None

    def draw(self, w: int | None = None) -> int | None:
        """The workload time of the next operation: ``w`` (an expiry), or
        drawn in the step; the kernel time and CPU go to the allocators'
        trace.  None outside a step."""
        win = self.window
        if win is None:
            return None
        base, k0, span = win
        r = self.rng
        if w is None:
            w = base + int(r.random() * span)
        if k0 is None:                       # owed time, simulated untraced
            return w
        cpu, t = int(r.random() * self.nr_cpus), k0 + (w - base)
        if self.hp is not None and self.hp.changes:
            cpu = self.hp.cpu_at(cpu, t)        # (an offline CPU frees nothing)
        self.trace.at(cpu, t)
        return w
