"""Loading and unloading modules, as allocation profiling sees it
(``codetag_load_module`` / ``codetag_unload_module`` of lib/codetag.c with
the callbacks of lib/alloc_tag.c, and kernel/module/main.c around them).

Loading a module registers its tags (the rows of the call-site table listed
under its name, fresh counters) so they show in /proc/allocinfo as
``[name]``, lowest free id first; with compressed page references (6.13+) a
module whose tags no longer fit in the page flags shuts profiling down.
Then its init allocates at its tags (a footprint drawn per module from its
own RNG); ``ctagmod``, the test module of the allocation-profiling
documentation, takes 1010 pages at its one tag and taints the kernel ``C``
(staging).

Unloading runs the module's exit (frees what its init allocated, unless
told to leak) and drops the tags; memory still charged to them is reported
(a WARN before 6.13, pr_info from 6.13 on) and the module is not unloaded
cleanly.

:func:`load_module` / :func:`unload_module` do all of it for a kernel
with the simulated allocators (``kernel.alloc_calls``);
:func:`module_load` / :func:`module_unload` are the tag part alone.
"""

from __future__ import annotations

import errno

from ..fs.pseudo import KernelError
from ..panic import add_taint
from ..printk import KERN_WARNING
from .alloc_tag import (AllocTag, AllocTagging, load_tag_table, make_tags, nr_unused_pageflag_bits,
                        shutdown_mem_profiling)
from .alloc_sites import SiteProfile, lognormal

CTAGMOD_TAG = ("drivers/staging/ctagmod/ctagmod.c", 20, "ctagmod_start", "alloc_pages")
CTAGMOD_PAGES = 1010


# ---------------------------------------------------------------------------
# tags


def module_load(at: AllocTagging, name: str, tags: list | None = None) -> list:
    """``codetag_load_module``: register a module's tags (fresh counters)."""
    if name in at.modules:
        raise KernelError(errno.EEXIST)
    at.settle()                 # the time before it, without its tags
    if tags is None:
        rows = load_tag_table(at.version)[1].get(name, [])
        tags = make_tags(rows, name)
    at.modules[name] = tags
    if at.cttype is not None and tags:
        if at.compressed and at.support:
            bits = nr_unused_pageflag_bits(at.kernel.config, at.kernel.nr_cpus)
            if at.cttype.count + len(tags) + 1 >= (1 << bits):
                at.cttype.module_init(name, tags)
                shutdown_mem_profiling(at, True)
                at.kernel.printk("With module %s there are too many tags to fit in %d page flag bits. "
                                 "Memory allocation profiling is disabled!" % (name, bits), KERN_WARNING)
                return tags
        at.cttype.module_init(name, tags)
    return tags


def module_unload(at: AllocTagging, name: str) -> bool:
    """``codetag_unload_module``: drop the tags; False if memory is still
    charged to them (the kernel then keeps the module's memory)."""
    if name not in at.modules:
        raise KernelError(errno.ENOENT)
    at.settle()
    del at.modules[name]
    ok = True
    if at.cttype is not None:
        saved = at.warn_task, at.warn_trace
        at.warn_task = ("rmmod", 4242, 0)
        at.warn_trace = ("codetag_unload_module+0x1a5/0x250", "free_module+0x2f/0x1c0",
                         "__do_sys_delete_module+0x1b5/0x2e0", "do_syscall_64+0x82/0x170",
                         "entry_SYSCALL_64_after_hwframe+0x76/0x7e")
        try:
            ok = at.cttype.unload_module(name)
        finally:
            at.warn_task, at.warn_trace = saved
    if not ok:
        at.kernel.printk("%s: memory allocation(s) from the module still alive, cannot unload cleanly"
                         % name, KERN_WARNING)
    return ok


# ---------------------------------------------------------------------------
# the module's init and exit


def _module_footprint(calls, name: str, tags: list) -> list:
    rng = calls.kernel.subsystem_rng("alloc_workload:module:" + name)
    objs = []
    if name == "ctagmod":
        at = calls.at
        old = at.current
        at.current = tags[0]
        try:
            objs.append(calls.pa.alloc_pages_bulk_noprof(CTAGMOD_PAGES))
        finally:
            at.current = old
        return objs
    for t in tags:
        p = SiteProfile(t, rng)
        if rng.random() < 0.4:
            n = int(lognormal(rng, 2.0, 1.2, 1, 500))
            if p.kind in ("vmalloc", "kvmalloc", "page") and p.order:
                n = min(n, 4)
            objs.append(calls.alloc_profile(p, n))
    return objs


def load_module(kernel, name: str) -> list:
    """Load a module: its tags appear in /proc/allocinfo (``[name]``) and its
    init allocates at them.  Returns the module's tags."""
    at = kernel.alloc_tag
    calls = kernel.alloc_calls
    if name == "ctagmod":
        f, line, func, callee = CTAGMOD_TAG
        tags = module_load(at, name, [AllocTag(f, line, func, name, callee)])
    else:
        tags = module_load(at, name)
    calls.modules[name] = _module_footprint(calls, name, tags)
    if name == "ctagmod":
        add_taint(kernel, "C")
    return tags


def unload_module(kernel, name: str, leak: bool = False) -> bool:
    """Unload a module; its exit frees what its init allocated unless
    ``leak``.  Returns False when allocations were still charged to it."""
    calls = kernel.alloc_calls
    objs = calls.modules.pop(name, [])
    if name == "ctagmod" and calls.missing_annotation_obj is not None:
        calls.slab.kfree(calls.missing_annotation_obj)
        calls.missing_annotation_obj = None
    if not leak:
        for o in objs:
            calls.free(o)
    return module_unload(kernel.alloc_tag, name)
