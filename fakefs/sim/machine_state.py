"""The simulated machine's fields, declared once for its parts
(``HostQueue``, ``PerCpu``, ``Machine``: each a class of the chain, each
using them), and the two things every part does with them: queue an event
(``_push``) and take a CPU's instant (``_at``).  ``Machine.__init__`` gives
them their values; compiled, ``machine_state.pxd`` makes them one C struct
(docs/data-plane.md "Typed fields")."""

from __future__ import annotations


class MachineState:
    """What the machine keeps (``Machine.__init__`` says what each is)."""

    __slots__ = ("kernel", "life", "entry", "calls", "host_calls", "irq", "timers", "wq", "rng",
                 "host", "host_behaviour", "child_behaviour", "devices", "heap",
                 "process_timeout", "sigchld_handler", "sched", "allocs", "tick_ns", "ipi_ns",
                 "switch_ns", "seq", "tokens", "time", "clock", "rcu", "wheel", "runs", "parked",
                 "exiting", "down_cpus", "frozen", "begins")

    def _push(self, t, kind, a, b) -> None:
        """An event of ``kind`` at ``t`` (arguments ``a``, ``b``), after the
        others queued at that instant."""
        self.seq += 1
        self.heap.push(t, self.seq, kind, a, b)

    def _at(self, cpu: int, t: int) -> int:
        """The time an event of ``cpu`` happens: never before its last one."""
        c = self.clock[cpu]
        if t < c:
            t = c
        self.clock[cpu] = t
        return t
