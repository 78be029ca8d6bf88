"""Booting a kernel with just the call-stack workload, and running its walk."""

from __future__ import annotations

import random

from fakefs.kernel.init import Kernel
from fakefs import sim
from fakefs.sim.clock import ManualClock

BOOT = [("fakefs.kernel.kallsyms", "kallsyms_init"), ("fakefs.sim.workload", "workload_init")]


def boot(seed=1, nr_cpus=2, host=False):
    return sim.keep_time(Kernel(seed=seed, nr_cpus=nr_cpus, clock=ManualClock(), host_kallsyms=host).boot(initcalls=BOOT))


def run(w, n, seed=1, ncpu=4):
    """``n`` samples, the CPUs in turn: [(task, stack)]."""
    rng = random.Random(seed)
    return [w.sample(rng, i % ncpu) for i in range(n)]


def graph_edges(w):
    """Every (caller, callee) pair any task may call."""
    edges = set()
    for table in list(w.wg.tables.values()) + [w.wg.base_table]:
        for f, e in enumerate(table):
            if e is not None:
                edges.update((f, g) for g in e[0] if g >= 0)
    return edges


def names_of(ks, stack):
    return [ks.sprint_symbol_no_offset(ip) for ip in stack]
