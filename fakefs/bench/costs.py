"""Costs of the simulated kernel's steps and tables (``make bench``), each
beside a baseline measured in the same run: what the unit tests used to
time with fixed limits (a timed assertion fails on a busy machine and
proves nothing on an idle one).

1. a 20 ms step of the machine with ``profile=2``, against the same step
   without profiling;
2. a 20 ms step of the allocation workload on 16 CPUs, against 2 CPUs;
3. rendering ``/proc/allocinfo`` with every module's tags loaded, against
   the core tags alone;
4. a 20 ms step of the 2.6.30 board under the ``stress`` scenario, against
   ``idle``;
5. ``Workload.sample()`` (a task and its stack on a CPU), against drawing
   one random number;
6. loading the bundled kallsyms table, against parsing the host's
   ``/proc/kallsyms`` text (when the host shows addresses).
"""

from __future__ import annotations

import random
import statistics
import time

from .. import sim
from ..kernel.init import Kernel
from ..sim.clock import ManualClock

SEC = 1_000_000_000
STEP = 20_000_000


def _median(fn, rounds: int) -> float:
    out = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return statistics.median(out)


def _boot(cmdline: str = "", nr_cpus: int = 2) -> Kernel:
    return sim.boot(cmdline=cmdline, seed=1, nr_cpus=nr_cpus, clock=ManualClock(),
                    host_kallsyms=False)


def _machine_step(k: Kernel) -> float:
    k.clock.advance(SEC)
    k.timekeeper.run_until_now()

    def step():
        k.clock.advance(STEP)
        k.timekeeper.run_until_now()
    return _median(step, 50)


def bench_profile_tick() -> list[tuple[str, float, str]]:
    base = _machine_step(_boot())
    prof = _machine_step(_boot("profile=2"))
    return [("20 ms step with profile=2", prof * 1e3, "ms"),
            ("  baseline: the same step without profiling", base * 1e3, "ms"),
            ("  ratio", prof / base, "x")]


def bench_alloc_step() -> list[tuple[str, float, str]]:
    got = {}
    for cpus in (2, 16):
        wl = _boot(nr_cpus=cpus).alloc_workload
        wl.run_for(2 * SEC)
        # (run_for: step() only owes the time while no kmem event records)
        got[cpus] = _median(lambda: wl.run_for(STEP), 100)
    return [("allocation workload, 20 ms step, 16 CPUs", got[16] * 1e3, "ms"),
            ("  baseline: 2 CPUs", got[2] * 1e3, "ms"),
            ("  ratio", got[16] / got[2], "x")]


def _read_all(k: Kernel, path: str) -> bytes:
    from ..sim.files import read_file
    return read_file(k, path)


def bench_allocinfo_render() -> list[tuple[str, float, str]]:
    from ..kernel.mm.alloc_tag import load_tag_table
    from ..kernel.mm.alloc_tag_module import load_module
    k = _boot()
    core = _median(lambda: _read_all(k, "proc/allocinfo"), 3)
    n_core = k.alloc_tag.cttype.count
    for name in sorted(load_tag_table((6, 12))[1]):
        if name not in k.alloc_tag.modules:
            load_module(k, name)
    full = _median(lambda: _read_all(k, "proc/allocinfo"), 3)
    return [("read /proc/allocinfo, %d tags" % k.alloc_tag.cttype.count, full * 1e3, "ms"),
            ("  baseline: the %d core tags" % n_core, core * 1e3, "ms"),
            ("  ratio", full / core, "x")]


def bench_stress_step() -> list[tuple[str, float, str]]:
    from ..kernel.mm.stress_2630 import MemorySystem
    hz = 250
    got = {}
    for scenario in ("idle", "stress"):
        ms = MemorySystem(128 << 20, nr_cpus=2, hz=hz, rng=random.Random(1))
        ms.boot()
        ms.set_scenario(scenario)
        ms.run_jiffies(8 * hz)
        got[scenario] = _median(lambda: ms.run_jiffies(5), 50)
    return [("2.6.30 board, 20 ms step, stress scenario", got["stress"] * 1e3, "ms"),
            ("  baseline: idle scenario", got["idle"] * 1e3, "ms"),
            ("  ratio", got["stress"] / got["idle"], "x")]


def bench_sample() -> list[tuple[str, float, str]]:
    w = _boot(nr_cpus=4).workload
    rng = random.Random(1)
    for i in range(20000):
        w.sample(rng, i % 4)
    n = 20000

    def samples():
        for i in range(n):
            w.sample(rng, i % 4)

    def draws():
        for _ in range(n):
            rng.random()
    per = _median(samples, 5) / n
    base = _median(draws, 5) / n
    return [("Workload.sample()", per * 1e6, "us"),
            ("  baseline: one random.random()", base * 1e6, "us"),
            ("  ratio", per / base, "x")]


def bench_kallsyms_load() -> list[tuple[str, float, str]]:
    from ..kernel.kallsyms import Kallsyms
    bundled = _median(Kallsyms.load_bundled, 3)
    out = [("load the bundled kallsyms table", bundled, "s")]
    try:
        with open("/proc/kallsyms") as fh:
            text = fh.read()
    except OSError:
        text = ""
    if text and not text.startswith("0000000000000000"):
        host = _median(lambda: Kallsyms.from_proc_text(text), 3)
        out += [("  baseline: parse the host's /proc/kallsyms", host, "s"),
                ("  ratio", bundled / host, "x")]
    else:
        out.append(("  (no baseline: the host hides its addresses)", 0.0, ""))
    return out


SECTIONS = [
    ("profiling tick cost (median of 50 steps)", bench_profile_tick),
    ("allocation workload step (median of 100 steps)", bench_alloc_step),
    ("allocinfo render (median of 3 reads)", bench_allocinfo_render),
    ("2.6.30 heap stress step (median of 50 steps)", bench_stress_step),
    ("workload sampling (median of 5 rounds of 20000)", bench_sample),
    ("kallsyms load (median of 3 loads)", bench_kallsyms_load),
]
