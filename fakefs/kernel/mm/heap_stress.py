"""EQware's heap-stress instrumentation for 2.6.30 (2009): ``/proc/allocinfo``.

The patch counts, in ``heap_alloc_count[6]``, at which depth of
``__alloc_pages_internal()`` each allocation request ended: levels 1-5 are
the five ``goto got_pg`` (low watermark; min watermark after waking kswapd;
no watermarks for PF_MEMALLOC/TIF_MEMDIE tasks; after direct reclaim; high
watermark after the OOM lock, catching a parallel OOM kill) and level 6 is
``nopage``, a failure.  ``/proc/allocinfo`` prints the six counters on one
line and zeroes them: each read shows what happened since the previous one.
The file is ``-r--r--r--`` (anyone may read, and so clear, it); it has no
write handler, so a write fails with EIO.

Only the persona built with the patch has it; there it replaces the 6.10+
allocation-profiling file of the same name, which that kernel cannot have.

Also published for the persona, from the same memory model: the
2.6.30 ``/proc/buddyinfo``, the ``vm.min_free_kbytes``,
``vm.lowmem_reserve_ratio`` and ``vm.drop_caches`` sysctls, and a control
that is not part of any kernel - ``/proc/heap_stress`` selects the
simulated workload (``idle``, ``pagecache``, ``writer``, ``memhog``,
``netstorm``, ``stress``; also ``heap_stress=`` on the command line).  The
board's RAM is 128 MB unless ``mem=`` says otherwise.
"""

from __future__ import annotations

import errno

from ..config import PERSONAS
from ..fs.proc.base import CtlTable, proc_create, proc_root, register_sysctl
from ..fs.pseudo import FileOperations, KernelError
from ..printk import KERN_INFO, KERN_WARNING
from ..profile import simple_strtoull
from .page_alloc_2630 import MAX_ORDER, PAGE_SHIFT
from .stress_2630 import SCENARIO_PARTS, SCENARIOS, MemorySystem

PATCH = "eqware-heap-stress"
DEFAULT_MEM = 128 << 20
MIN_MEM = 32 << 20
MAX_MEM = 2 << 30
KNOB = "heap_stress"


def has_heap_stress(kernel) -> bool:
    return PATCH in PERSONAS.get(kernel.config.persona, {}).get("patches", ())


def memparse(text: str) -> int:
    """``memparse()``: a number with an optional K/M/G suffix."""
    value, end = simple_strtoull(text)
    if end == 0:
        return 0
    suffix = text[end:end + 1].upper()
    for s, shift in (("G", 30), ("M", 20), ("K", 10)):
        if suffix == s:
            value <<= shift
            break
    return value


class HeapStress:
    def __init__(self, kernel, mem_bytes: int, scenario: str):
        self.kernel = kernel
        cfg = kernel.config
        self.hz = int(cfg["CONFIG_HZ"] or 250)
        self.ms = MemorySystem(mem_bytes, kernel.nr_cpus, self.hz,
                               rng=kernel.subsystem_rng("heap_stress"),
                               printk=kernel.log.printk)
        self.scenario = scenario
        self.drop_caches = 0

    @property
    def counters(self) -> list[int]:
        return self.ms.pa.heap_alloc_count

    def read_and_clear(self) -> str:
        c = self.counters
        text = "%d %d %d %d %d %d\n" % tuple(c)
        c[:] = [0] * 6
        return text

    # -- time ----------------------------------------------------------------
    def _jiffies(self, t_ns: int) -> int:
        return t_ns * self.hz // 1_000_000_000

    def run(self, t0: int, t1: int) -> None:
        n = self._jiffies(t1) - self._jiffies(t0)
        if n > 0:
            self.ms.run_jiffies(n)

    def skip(self, t0: int, t1: int) -> None:
        self.ms.skip_jiffies(self._jiffies(t1) - self._jiffies(t0))

    # -- boot messages (mm/page_alloc.c, arch/x86/mm/init_64.c) -------------
    def boot_messages(self) -> None:
        pa = self.ms.pa
        log = self.kernel.log.printk
        holes = sum(z.spanned_pages - z.present_pages - memmap - dma_res
                    for z, memmap, dma_res in pa.zone_boot_info)
        total = sum(z.spanned_pages for z in pa.zones) - holes
        log("On node 0 totalpages: %d" % total, KERN_INFO)
        for z, memmap, dma_res in pa.zone_boot_info:
            log("  %s zone: %d pages used for memmap" % (z.name, memmap), KERN_INFO)
            if dma_res:
                log("  %s zone: %d pages reserved" % (z.name, dma_res), KERN_INFO)
            log("  %s zone: %d pages, LIFO batch:%d" % (z.name, z.present_pages, z.batch),
                KERN_INFO)
        log("Built 1 zonelists in Zone order, mobility grouping on.  Total pages: %d"
            % sum(z.present_pages for z in pa.zones), KERN_INFO)
        ktotal = sum(z.spanned_pages for z in pa.zones) << (PAGE_SHIFT - 10)
        avail = pa.totalram_pages << (PAGE_SHIFT - 10)
        absent = holes << (PAGE_SHIFT - 10)
        log("Memory: %dk/%dk available (3133k kernel code, %dk absent, %dk reserved, "
            "1778k data, 484k init)" % (avail, ktotal, absent, ktotal - avail - absent), KERN_INFO)


# ------------------------------------------------------------- proc files
class AllocinfoOps(FileOperations):
    """Read: the six counters, then zero them (once per read from 0)."""

    def show(self, f):
        return f.data.read_and_clear()

    def write(self, f, data):
        raise KernelError(errno.EIO)      # no write_proc


class BuddyinfoOps(FileOperations):
    def show(self, f):
        out = []
        for z in f.data.ms.pa.managed_zones:
            out.append("Node 0, zone %8s " % z.name)
            out.extend("%6d " % z.nr_free(o) for o in range(MAX_ORDER))
            out.append("\n")
        return "".join(out)

    def write(self, f, data):
        raise KernelError(errno.EIO)


class KnobOps(FileOperations):
    """The simulator's workload switch, shown like an I/O scheduler list."""

    def show(self, f):
        cur = f.data.ms.scenario
        return " ".join("[%s]" % s if s == cur else s for s in SCENARIOS) + "\n"

    def write(self, f, data):
        name = data.decode("latin-1").strip()
        if name not in SCENARIO_PARTS:
            raise KernelError(errno.EINVAL)
        f.data.ms.set_scenario(name)
        return len(data)


def _parse_int(text: str) -> int:
    s = text.strip()
    neg = s.startswith("-")
    if neg:
        s = s[1:]
    v, end = simple_strtoull(s)
    if not s or end != len(s):
        raise KernelError(errno.EINVAL)
    return -v if neg else v


def _sysctls(hs: HeapStress) -> list[CtlTable]:
    pa = hs.ms.pa

    def set_min_free(text):
        v = _parse_int(text)
        if v < 0:
            raise KernelError(errno.EINVAL)
        pa.set_min_free_kbytes(v)

    def set_ratio(text):
        vals = [_parse_int(w) for w in text.split()]
        for i, v in enumerate(vals[:len(pa.lowmem_reserve_ratio)]):
            pa.lowmem_reserve_ratio[i] = max(1, v)
        pa.setup_per_zone_lowmem_reserve()

    def set_drop(text):
        v = _parse_int(text)            # 2.6.30: any int; bit 0 page cache, bit 1 slab
        hs.drop_caches = v
        vm = hs.ms.vm
        for z in pa.managed_zones:
            if v & 1:
                clean = list(z.lru_clean)
                z.lru_clean.clear()
                vm.nr_file -= len(clean)
                pa.free_page_list(clean)
            if v & 2:
                slab = list(z.slab_reclaimable)
                z.slab_reclaimable.clear()
                vm.nr_slab_reclaimable -= len(slab)
                pa.free_page_list(slab)

    return [
        CtlTable("min_free_kbytes", 0o644, lambda: "%d\n" % pa.min_free_kbytes, set_min_free),
        CtlTable("lowmem_reserve_ratio", 0o644,
                 lambda: "\t".join(str(r) for r in pa.lowmem_reserve_ratio) + "\n", set_ratio),
        CtlTable("drop_caches", 0o644, lambda: "%d\n" % hs.drop_caches, set_drop),
    ]


# ------------------------------------------------------------------- init
def register_params(kernel) -> None:
    if not has_heap_stress(kernel):
        return
    params = kernel.setup["heap_stress"] = {"mem": DEFAULT_MEM, "scenario": "idle"}

    def mem_param(val):
        if val:
            v = memparse(val)
            if v:
                params["mem"] = v

    def stress_param(val):
        if val in SCENARIO_PARTS:
            params["scenario"] = val
        else:
            kernel.log.printk("heap_stress: unknown workload '%s'" % val, KERN_WARNING)

    kernel.early_param("mem", mem_param)
    kernel.early_param(KNOB, stress_param)


def heap_stress_init(kernel) -> None:
    if not has_heap_stress(kernel):
        return
    if "allocinfo" in proc_root(kernel).children:
        kernel.log.printk("heap_stress: /proc/allocinfo already exists", KERN_WARNING)
        return
    params = kernel.setup.get("heap_stress", {"mem": DEFAULT_MEM, "scenario": "idle"})
    mem = max(MIN_MEM, min(MAX_MEM, params["mem"]))
    hs = HeapStress(kernel, mem, params["scenario"])
    kernel.heap_stress = hs
    hs.boot_messages()
    hs.ms.boot()
    hs.ms.set_scenario(params["scenario"])
    proc_create(kernel, "allocinfo", 0o444, None, AllocinfoOps(), hs)
    proc_create(kernel, "buddyinfo", 0o444, None, BuddyinfoOps(), hs)
    proc_create(kernel, KNOB, 0o644, None, KnobOps(), hs)
    register_sysctl(kernel, "vm", _sysctls(hs))
    kernel.add_timer_hook(hs.run, skip=hs.skip)
