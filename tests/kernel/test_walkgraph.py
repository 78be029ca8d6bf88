"""The call graph resolved against a symbol table."""

from __future__ import annotations

import random
import tomllib

from workload_helpers import boot, run

from fakefs.kernel.callgraph import CallGraph
from fakefs.kernel.init import Kernel
from fakefs.kernel.kallsyms import Kallsyms
from fakefs.sim.population import parse_tasks
from fakefs.sim.workload import Workload
from fakefs.sim.clock import ManualClock

TINY_TASKS = """
[idle]
profile_cpu0 = "idle0"
profile = "idle"
weight_min = 0.5
weight_per_task_weight = 0.5

[[boot]]
tasks = [{ comm = "init", pid = 1, user = true, profile = "user", weight = 1.0, cpu = 0 }]
"""


def test_bundled_and_host_tables_both_work():
    k = boot(seed=1, nr_cpus=2, host=True)
    w = k.workload
    assert w.wg.events["kmem_cache_alloc"] and w.wg.events["sched_switch"]
    for task, stack in run(w, 2000, ncpu=2):
        assert all(k.kallsyms.lookup(ip) for ip in stack)
    bundled = boot(seed=1, nr_cpus=2, host=False)
    assert bundled.kallsyms.source == "bundled"
    for task, stack in run(bundled.workload, 2000, ncpu=2):
        assert all(bundled.kallsyms.lookup(ip) for ip in stack)


def test_missing_functions_are_spliced_out():
    core = [(0x1000 + 0x100 * i, "T", n) for i, n in
            enumerate(["_stext", "entry", "a", "c", "d", "leaf", "idle_loop", "halt", "sw", "_etext"])]
    text = """
%param sharpen 1
%notrace entry
%loop idle_loop
%halt halt
%switch sw
%irq entry
%event kmalloc leaf
entry: a
a: gone*3 d
gone: c
c: leaf
d: leaf sw
idle_loop: halt sw*0.1
%profile idle
%root idle_loop
%end
%profile idle0
%root idle_loop
%end
%profile user
%root entry
%end
"""
    kern = Kernel(seed=1, nr_cpus=1, clock=ManualClock(), host_kallsyms=False)
    kern.kallsyms = Kallsyms(core)
    tasks = parse_tasks(tomllib.loads(TINY_TASKS))
    w = Workload(kern, CallGraph.parse(text), tasks)
    assert kern.sched.tasks[1].comm == "init" and w.profile_of(1) == "user"
    assert "gone" in w.missing
    a, c = w.wg.ids["a"], w.wg.ids["c"]
    callees = w.wg.base_table[a][0]
    assert c in callees and w.wg.ids["d"] in callees
    rng = random.Random(1)
    names = {kern.kallsyms.sprint_symbol_no_offset(s[0]) for _, s in
             (w.sample(rng, 0) for _ in range(500))}
    assert "gone" not in names and {"a", "c", "leaf"} <= names
    task, stack = w.stacks_for_event(rng, 0, "kmalloc")
    assert kern.kallsyms.sprint_symbol_no_offset(stack[0]) == "leaf"
