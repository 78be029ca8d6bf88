"""kmem events come from the allocators' own objects, the ones /proc/allocinfo counts."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

from kfiles import rd, wr

from fakefs import compiled, sim
from fakefs.kernel.mm.kmem_trace import GFP_COMP_BIT, kernel_gfp, page_address
from fakefs.kernel.irq import INTERRUPT_FUNCS
from fakefs.sim.clock import ManualClock
from fakefs.kernel.lib.vsprintf import hashed_ptr

EVENTS = ("kmalloc", "kmem_cache_alloc", "kfree", "kmem_cache_free", "mm_page_alloc",
          "mm_page_free")


def _traced(seconds=0.6, count=False):
    """(kernel, the trace's lines, counts, pointers) of ``seconds`` with the
    kmem events on; ``count``: the slab and page allocations made are
    counted (``counts``) and their pointers kept, by wrapping the allocators'
    methods, which only their Python source allows (``_counted``)."""
    k = sim.boot(seed=5, nr_cpus=2, clock=ManualClock(), host_kallsyms=False)
    wr(k, "buffer_size_kb", "8192")
    for e in EVENTS:
        wr(k, "events/kmem/%s/enable" % e, "1")
    slab, pa = k.slab, k.page_alloc
    counts = {"slab": 0, "pages": 0}
    alloc, bulk, single = slab._slab_alloc, pa.alloc_pages_bulk_noprof, pa.alloc_pages_noprof
    ptrs = set()

    def count_slab(s, gfp, node):
        obj = alloc(s, gfp, node)
        counts["slab"] += 1
        ptrs.add(obj.ptr)
        return obj

    def count_bulk(nr, gfp=0x1):
        counts["pages"] += nr
        return bulk(nr, gfp)

    def count_single(order=0, gfp=0x1):
        counts["pages"] += 1
        return single(order, gfp)

    if count:
        slab._slab_alloc, pa.alloc_pages_bulk_noprof, pa.alloc_pages_noprof = (
            count_slab, count_bulk, count_single)
    for _ in range(int(seconds / 0.02)):
        k.clock.advance(20_000_000)
        k.timekeeper.run_until_now()
    if count:
        slab._slab_alloc, pa.alloc_pages_bulk_noprof, pa.alloc_pages_noprof = alloc, bulk, single
    wr(k, "tracing_on", "0")
    lines = [ln for ln in rd(k, "trace").splitlines() if not ln.startswith("#")]
    return k, lines, counts, ptrs


COUNTED = """
import json
import test_kmem_trace as t
from fakefs.kernel.mm import slub
from fakefs.timeline import check
k, lines, counts, ptrs = t._traced(count=True)
allocs = [ln for ln in lines if " kmalloc: " in ln or " kmem_cache_alloc: " in ln]
pages = [ln for ln in lines if " mm_page_alloc: " in ln]
# slab objects made for the large kmallocs are pages: the rest one event each
large = [ln for ln in allocs if " kmalloc: " in ln
         and int(ln.split("bytes_alloc=")[1].split()[0]) > 8192]
print(json.dumps({"lost": "LOST" in "".join(lines), "events": len(allocs) - len(large),
                  "slab": counts["slab"], "page events": len(pages),
                  "pages": counts["pages"], "violations": check(lines).total,
                  "slab module": slub.__file__}))
"""


def _counted() -> dict:
    """``_traced(count=True)`` in a child running the modules from their
    Python source (``FAKEFS_PURE_PYTHON``): compiled, the allocator's
    methods are C (``slub.pxd``) and can't be wrapped; ``test_compiled``
    holds both ways equal byte for byte."""
    here = os.path.dirname(os.path.abspath(__file__))
    tests = os.path.dirname(os.path.dirname(here))
    env = dict(os.environ, **{compiled.PURE_ENV: "1"})
    env["PYTHONPATH"] = os.pathsep.join([here, tests, os.path.dirname(tests)])
    out = subprocess.run([sys.executable, "-c", COUNTED], env=env, cwd=here, check=True,
                         capture_output=True, text=True, timeout=600).stdout
    return json.loads(out.splitlines()[-1])


def test_every_allocation_is_an_event_and_every_event_an_allocation():
    c = _counted()
    assert c["slab module"].endswith("slub.py")          # (wrapped: its source ran)
    assert not c["lost"]
    assert c["events"] == c["slab"] > 100
    assert c["page events"] == c["pages"] > 10
    assert c["violations"] == 0


def test_call_sites_are_the_tags_allocinfo_lists():
    k, lines, _counts, _ptrs = _traced()
    funcs = [ln.split("call_site=")[1].split("+")[0] for ln in lines
             if " kmalloc: " in ln or " kmem_cache_alloc: " in ln]
    listed = set(re.findall(r"func:(\S+)", rd(k, "proc/allocinfo", base="")))
    wl = k.workload
    known = listed | {wl.inlined_into(f) for f in listed if not k.kallsyms.addr_of(f)}
    # a tag in a function the symbol table lacks, inlined where the call
    # graph does not say, takes the caller the walk draws
    assert funcs and sum(f in known for f in funcs) >= 0.6 * len(funcs)


def test_an_allocation_at_a_tag_is_traced_with_its_site_and_address():
    k = sim.boot(seed=5, nr_cpus=2, clock=ManualClock(), host_kallsyms=False)
    wr(k, "events/kmem/kmalloc/enable", "1")
    wr(k, "events/kmem/kfree/enable", "1")
    tag = next(t for t in k.alloc_tag.iter_tags() if t.function == "__alloc_skb")
    kt = k.page_alloc.trace
    kt.at(1, 5_000_000)
    obj = k.slab.kmalloc(tag, 100)
    kt.at(1, 6_000_000)
    k.slab.kfree(obj)
    kt.when = None
    k.clock.advance(20_000_000)
    k.timekeeper.run_until_now()
    text = rd(k, "trace")

    mine = [ln for ln in text.splitlines() if hashed_ptr(obj.ptr) in ln]
    alloc = next(ln for ln in mine if " 0.005000: " in ln)
    free = next(ln for ln in mine if " 0.006000: " in ln)
    assert "kmalloc: call_site=__alloc_skb+0x" in alloc and "bytes_req=100 bytes_alloc=128" in alloc
    assert " [001] " in alloc and " [001] " in free
    assert "kfree: call_site=" in free


def test_a_freed_pointer_was_handed_out():
    k, lines, _counts, _ptrs = _traced(1.0)
    given = {}
    for ln in lines:
        m = re.search(r" (kmalloc|kmem_cache_alloc|kfree|kmem_cache_free): .*ptr=([0-9a-f]{16})",
                      ln)
        if not m:
            continue
        ptr = m.group(2)
        if m.group(1) in ("kmalloc", "kmem_cache_alloc"):
            given[ptr] = given.get(ptr, 0) + 1
        elif ptr in given:                       # freed after it was handed out here
            given[ptr] -= 1
            assert given[ptr] >= 0
    assert any(v == 0 for v in given.values())   # some were freed within the window


def test_addresses_and_gfp():
    assert page_address(0x100000) == 0xffff888100000000
    assert kernel_gfp(0x1) == 0xcc0 and kernel_gfp(0x1 | 0x800) == 0xcc0 | 0x400000
    assert GFP_COMP_BIT == 0x40000


def test_nothing_is_fired_without_a_probe_or_at_boot():
    k = sim.boot(seed=5, nr_cpus=2, clock=ManualClock(), host_kallsyms=False)
    kt = k.page_alloc.trace
    assert kt.when is None                     # between steps, nobody says when
    assert not kt.tp_kmalloc.probes
    assert kt.tp_kmalloc.driven and kt.tp_page_free.driven


def test_a_tag_in_a_cloned_function_calls_from_the_clone():
    """A tag whose function the compiler cloned (``name.isra.0``) has its
    call site in the clone, not in whatever called it."""
    k = sim.boot(seed=5, nr_cpus=1, clock=ManualClock(), host_kallsyms=False)
    ks, kt = k.kallsyms, k.alloc_calls.trace
    clone = next(n for n in ks.functions() if n.endswith(".isra.0")
                 and ks.addr_of(n[:-len(".isra.0")]) is None)
    tag = next(iter(k.alloc_tag.iter_tags()))
    fake = type(tag)(tag.filename, tag.lineno, clone[:-len(".isra.0")])
    site = kt.call_site(fake)
    assert site and ks.lookup(site)[0] == clone


def test_while_a_kmem_event_records_the_workload_runs_at_once_then_owes_again():
    k = sim.boot(seed=5, nr_cpus=2, clock=ManualClock(), host_kallsyms=False)
    wl = k.alloc_workload
    k.clock.advance(300_000_000)
    k.timekeeper.run_until_now()
    assert wl.owed == 300_000_000                 # nobody looks: owed
    wr(k, "events/kmem/kfree/enable", "1")
    k.clock.advance(300_000_000)
    k.timekeeper.run_until_now()
    assert wl.owed == 0 and wl.now >= 600_000_000  # the owed time first, untraced
    assert "kfree: call_site=" in rd(k, "trace")
    wr(k, "events/kmem/kfree/enable", "0")
    k.clock.advance(100_000_000)
    k.timekeeper.run_until_now()
    assert wl.owed == 100_000_000


def test_buffer_pages_wait_for_owed_work_only_near_the_memory_limit():
    import errno
    from kfiles import errno_of
    k = sim.boot(seed=5, nr_cpus=2, clock=ManualClock(), host_kallsyms=False)
    wl = k.alloc_workload
    k.clock.advance(200_000_000)
    k.timekeeper.run_until_now()
    k.tracing.instance_mkdir("inst")                 # pages far from the limit: counters only
    wr(k, "buffer_size_kb", "4096")
    assert wl.owed == 200_000_000
    assert errno_of(wr, k, "buffer_size_kb", "9000000") == errno.ENOMEM   # 2 x 8.6 GiB
    assert wl.owed == 0


def _allocation_stacks(seconds=0.2):
    """(kernel, [(event line, call site function, stack frames)]) of the
    kmalloc/kmem_cache_alloc events of a traced run with stacktrace on."""
    k = sim.boot(seed=5, nr_cpus=2, clock=ManualClock(), host_kallsyms=False)
    for e in ("kmalloc", "kmem_cache_alloc"):
        wr(k, "events/kmem/%s/enable" % e, "1")
    wr(k, "options/stacktrace", "1")
    k.clock.advance(int(seconds * 1e9))
    body = [ln for ln in rd(k, "trace").splitlines() if not ln.startswith("#")]
    out = []
    for i, ln in enumerate(body):
        m = re.search(r"call_site=([\w.]+)\+", ln)
        if not m:
            continue
        frames = []
        for nxt in body[i + 2:]:
            if not nxt.startswith(" => "):
                break
            frames.append(nxt[4:])
        out.append((ln, m.group(1), frames))
    return k, out


def test_an_allocation_stack_goes_through_its_call_site():
    """kmalloc/kmem_cache_alloc with stacktrace: frame [1] is the call site
    (the tag's function), every pair below it a call the kernel makes (one
    of the walk graph, or one of the source the graph lacks:
    data/alloc_callers.txt), down to an entry point (a task's or an
    interrupt's): never the allocator and its caller alone."""
    k, events = _allocation_stacks()
    wl = k.workload
    wg = wl.wg
    entries = {wg.names[f] for p in wg.profiles.values() for f in p["root_table"][0]}
    entries |= {wg.names[f] for f in wg.irq_table[0]}
    short = via_source = 0
    for ln, site, frames in events:
        assert frames[1] == site, (ln, frames)
        if len(frames) == 2:
            short += 1
            continue
        for callee, caller in zip(frames[1:], frames[2:]):
            if caller in wg.ids and callee in wg.ids and (wg.ids[caller], wg.ids[callee]) in wg.site:
                continue
            assert caller in wl.sources.callers(callee), (caller, callee, frames)
            via_source += 1
        assert frames[-1] in entries, frames
    assert len(events) > 500 and short <= len(events) // 100
    assert via_source > 50                 # call sites the graph lacks climb their source callers


def test_a_path_lookup_allocates_in_a_task_that_looks_up_paths():
    """An allocation happens where a task that makes it runs: getname()'s
    names_cache buffers come from tasks making system calls, never from a
    kernel thread (which has no way to getname_flags())."""
    k, events = _allocation_stacks()
    getname = [ln for ln, site, _frames in events if site == "getname_flags"]
    assert len(getname) > 100
    states = k.workload.walk.states
    for ln in getname:
        pid = int(re.match(r"\s*.*-(\d+)\s+\[", ln).group(1))
        assert pid in states and states[pid].user, ln


def test_call_sites_only_boot_code_reaches_do_not_churn():
    """Of the call sites boot leaves allocating, only those a task gets to
    keep allocating while the machine runs: an __init function does not."""
    k = sim.boot(seed=5, nr_cpus=2, clock=ManualClock(), host_kallsyms=False)
    wl, aw = k.workload, k.alloc_workload
    sites = [aw.calls.trace.call_site(p.tag) for p, _rate, _life in aw.hot]
    assert len(sites) > 30 and all(s and wl.site_reachable(s) for s in sites)
    init_only = aw.calls.trace.call_site(next(t for t in k.alloc_tag.iter_tags()
                                        if t.function == "netlbl_domhsh_init"))
    assert init_only and not wl.site_reachable(init_only)


def test_an_allocation_that_may_sleep_is_never_made_under_an_interrupt():
    """A GFP_KERNEL allocation is the running task's own: no function an
    interrupt enters by on its stack, no hard-irq or softirq flag.  A site
    only interrupts get to allocates with GFP_ATOMIC there (in the softirq
    of a packet's receive), its stack going through its call site too."""
    _k, events = _allocation_stacks()
    kinds = {}
    for ln, site, frames in events:
        gfp = re.search(r"gfp_flags=(\w+)", ln).group(1)
        ctx = re.search(r"\] (\S{5}) ", ln).group(1)[2]
        kinds[gfp] = kinds.get(gfp, 0) + 1
        if gfp == "GFP_KERNEL":
            assert not set(frames) & INTERRUPT_FUNCS and ctx == ".", (ln, frames)
        else:
            assert gfp == "GFP_ATOMIC" and frames[1] == site, (ln, frames)
    assert kinds.get("GFP_KERNEL", 0) > 500 and kinds.get("GFP_ATOMIC", 0) > 0, kinds
