"""``make bench`` figures for memory allocation profiling.

* allocations per second the simulated allocators sustain with profiling on
  and off (a kmalloc/kfree + page alloc/free mix over the call-site table),
  and the ratio: the cost of the tag accounting in the model;
* the cost of one 20 ms step of the allocation workload;
* time to render /proc/allocinfo with every module of the table loaded
  (>= 5,000 tags), in the model and with ``cat`` through a real mount.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time

ROUNDS = 5


def _kernel(cmdline: str = "", nr_cpus: int = 2):
    from .. import sim
    from ..kernel.init import ALLOC_INITCALLS, Kernel
    from ..sim.clock import ManualClock
    k = Kernel(cmdline=cmdline, seed=1, nr_cpus=nr_cpus, clock=ManualClock())
    return sim.boot_kernel(k, [("fakefs.kernel.fs.proc.base", "proc_root_init"), *ALLOC_INITCALLS])


def _all_modules() -> list[str]:
    from ..kernel.mm.alloc_tag import load_tag_table
    return sorted(load_tag_table((6, 12))[1])


def _alloc_rate(k, enabled: bool, n: int = 20000) -> float:
    """Allocations/s of a mixed loop: 7 kmalloc sizes + one page, all freed."""
    at = k.alloc_tag
    at.enabled = enabled
    slab, pa = k.slab, k.page_alloc
    tags = [t for t in at.iter_tags() if not t.modname][:512]
    sizes = (16, 64, 192, 256, 512, 1024, 2048)
    rates = []
    for _ in range(ROUNDS):
        t0 = time.perf_counter()
        done = 0
        i = 0
        while done < n:
            tag = tags[i % len(tags)]
            objs = [slab.kmalloc(tag, s) for s in sizes]
            page = pa.alloc_pages(tag, 0)
            for o in objs:
                slab.kfree(o)
            pa.free_pages(page)
            done += len(sizes) + 1
            i += 1
        rates.append(done / (time.perf_counter() - t0))
    at.enabled = True
    return statistics.median(rates)


def _step_cost(k) -> float:
    wl = k.alloc_workload
    wl.run_for(2_000_000_000)
    costs = []
    for _ in range(200):
        t0 = time.perf_counter()
        wl.run_for(20_000_000)       # (step() only owes the time while untraced)
        costs.append(time.perf_counter() - t0)
    return statistics.median(costs)


def _render(k) -> tuple[int, float]:
    from ..kernel.fs.pseudo import File
    node = k.tree.root.walk("proc/allocinfo")
    times = []
    for _ in range(ROUNDS):
        t0 = time.perf_counter()
        f = File(node, os.O_RDONLY)
        node.fops.open(f)
        off = 0
        while True:
            chunk = node.fops.read(f, off, 131072)
            if not chunk:
                break
            off += len(chunk)
        node.fops.release(f)
        times.append(time.perf_counter() - t0)
    return k.alloc_tag.cttype.count, statistics.median(times)


def _cat_through_mount(modules: list[str]) -> float | None:
    if not os.path.exists("/dev/fuse"):
        return None
    mnt = tempfile.mkdtemp(prefix="fakefs-bench-")
    cmd = [sys.executable, "-m", "fakefs", "mount", "--cmdline",
           "modules-load=" + ",".join(modules), mnt]
    try:
        subprocess.run(cmd, check=True, timeout=120)
    except (OSError, subprocess.SubprocessError):
        os.rmdir(mnt)
        return None
    try:
        path = os.path.join(mnt, "proc/allocinfo")
        times = []
        for _ in range(ROUNDS + 1):
            t0 = time.perf_counter()
            subprocess.run(["cat", path], stdout=subprocess.DEVNULL, check=True)
            times.append(time.perf_counter() - t0)
        return statistics.median(times[1:])
    finally:
        subprocess.run(["fusermount3", "-u", mnt], check=False)
        for _ in range(50):
            try:
                os.rmdir(mnt)
                break
            except OSError:
                time.sleep(0.1)


def bench_alloc_tag() -> list[tuple[str, float, str]]:
    k = _kernel()
    on = _alloc_rate(k, True)
    off = _alloc_rate(k, False)
    step = _step_cost(_kernel(nr_cpus=8))
    mods = _all_modules()
    kb = _kernel("modules-load=" + ",".join(mods))
    ntags, render = _render(kb)
    out = [("allocations/s, profiling on (kmalloc+page mix)", on, "allocs/s"),
           ("allocations/s, profiling off", off, "allocs/s"),
           ("  ratio on/off", on / off, "x"),
           ("allocation workload: one 20 ms step (8 CPUs)", step * 1e3, "ms"),
           ("read /proc/allocinfo, %d tags (model, 128 KiB reads)" % ntags, render * 1e3, "ms")]
    cat = _cat_through_mount(mods)
    if cat is not None:
        out.append(("cat /proc/allocinfo through the mount, %d tags" % ntags, cat * 1e3, "ms"))
    return out


if __name__ == "__main__":
    for name, value, unit in bench_alloc_tag():
        print("  %-62s %12.3f %s" % (name, value, unit))
