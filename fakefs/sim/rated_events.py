"""The events that come at rates of their own: hits of the kernel's
tracepoints the machine makes up, not fired from a modelled code path.

A real machine switches tasks, wakes them, allocates and frees and signals
at rates its load sets; where the model has no code path that fires one of
these tracepoints (the machine's own switches and allocations are fired
where they happen), the trace activity (``trace_activity.py``) draws its
hits at ``rate(ev)`` a second per CPU, each with the stack the walk finds
for the event's kind and the fields ``make_fields()`` gives it: the task
running, a woken task, a slab cache and sizes, a signal.  The events and
their formats are the kernel's (kernel/trace/events_defs.py).
"""

from __future__ import annotations

from ..kernel.cpu import online_cpu
from ..kernel.trace.events_defs import GFP_ACCOUNT_BIT, GFP_ATOMIC, GFP_KERNEL, GFP_NOWAIT, GFP_ZERO_BIT

# (cache name, object size, request sizes)
SLAB_CACHES = [("kmalloc-64", 64, (40, 48, 56, 64)), ("kmalloc-192", 192, (136, 160, 192)),
               ("dentry", 192, (192,)), ("filp", 256, (256,)), ("vm_area_struct", 176, (176,)),
               ("anon_vma_chain", 64, (64,)), ("buffer_head", 104, (104,)),
               ("skbuff_head_cache", 232, (232,)), ("task_struct", 9664, (9664,)),
               ("radix_tree_node", 576, (576,)), ("ext4_inode_cache", 1184, (1184,)),
               ("kmalloc-1k", 1024, (576, 768, 1024)), ("names_cache", 4096, (4096,))]
KMALLOC_SIZES = [(8, 8), (16, 13), (32, 24), (64, 60), (96, 72), (128, 100), (192, 168),
                 (256, 240), (512, 384), (1024, 1000), (2048, 1536), (4096, 4096)]

# signals sent from elsewhere than the two paths the workload has (exit ->
# SIGCHLD, ITIMER_REAL -> SIGALRM): (sig, si_code, group, weight)
SIGNALS = [(17, 1, 1, 6), (14, 0x80, 1, 2), (10, 0, 1, 1), (15, 0, 1, 1), (9, 0, 1, 0.5),
           (13, 0x80, 0, 0.5), (28, 0x80, 1, 0.5), (2, 0x80, 1, 0.3), (23, 0x80, 1, 0.2)]
_SIG_WEIGHTS = [s[3] for s in SIGNALS]
TRACE_SIGNAL_DELIVERED, TRACE_SIGNAL_IGNORED, TRACE_SIGNAL_ALREADY_PENDING = 0, 1, 2
SIGCHLD, SIGALRM, CLD_EXITED, SI_KERNEL = 17, 14, 1, 0x80


def _call_site(stack):
    return stack[1] if len(stack) > 1 else stack[0]


def _slab_ptr(rng):
    return 0xffff888100000000 + rng.randrange(1 << 30) * 64


def _switch(rng, cpu, task, stack, act):
    nxt = act.kernel.sched.curr[cpu]        # the workload made the switch
    state = "R+" if rng.random() < 0.15 else rng.choice(("S", "S", "S", "D", "R"))
    if task.pid == 0:
        state = "R"
    return (task.comm, task.pid, task.prio, state, nxt.comm, nxt.pid, nxt.prio)


def _wake(rng, cpu, task, stack, act):
    t = rng.choice(act.tasks) if act.tasks else task
    target = rng.randrange(act.kernel.nr_cpus)
    if not act.kernel.sched.online[target]:       # (a wakeup goes to an online CPU)
        target = online_cpu(act.kernel, target)
    return (t.comm, t.pid, t.prio, target)


def _kmem_cache_alloc(rng, cpu, task, stack, act):
    name, size, reqs = rng.choice(SLAB_CACHES)
    gfp = rng.choice((GFP_KERNEL, GFP_KERNEL, GFP_KERNEL | GFP_ZERO_BIT, GFP_ATOMIC,
                      GFP_KERNEL | GFP_ACCOUNT_BIT))
    return (_call_site(stack), _slab_ptr(rng), rng.choice(reqs), size, gfp, -1,
            bool(gfp & GFP_ACCOUNT_BIT))


def _kmalloc(rng, cpu, task, stack, act):
    alloc, req_max = rng.choice(KMALLOC_SIZES)
    req = rng.randrange(max(1, alloc // 2), req_max + 1)
    gfp = rng.choice((GFP_KERNEL, GFP_KERNEL | GFP_ZERO_BIT, GFP_ATOMIC, GFP_NOWAIT))
    return (_call_site(stack), _slab_ptr(rng), req, alloc, gfp, -1)


def _kmem_cache_free(rng, cpu, task, stack, act):
    return (_call_site(stack), _slab_ptr(rng), rng.choice(SLAB_CACHES)[0])


def _kfree(rng, cpu, task, stack, act):
    return (_call_site(stack), _slab_ptr(rng))


def _signal_generate(rng, cpu, task, stack, act):
    ks = act.kernel.kallsyms
    names = set()
    for ip in stack[:16]:
        hit = ks.lookup(ip)
        if hit is not None:
            names.add(hit[0])
    users = [t for t in act.tasks if not t.kthread] or [task]
    if "it_real_fn" in names:
        sig, code, group = SIGALRM, SI_KERNEL, 1
        target = rng.choice(users)
    elif "do_notify_parent" in names:
        sig, code, group = SIGCHLD, CLD_EXITED, 1
        target = rng.choice(users)
    else:
        sig, code, group, _w = rng.choices(SIGNALS, _SIG_WEIGHTS)[0]
        target = rng.choice(users)
    r = rng.random()
    result = (TRACE_SIGNAL_ALREADY_PENDING if r < 0.05
              else TRACE_SIGNAL_IGNORED if sig == SIGCHLD and r < 0.3
              else TRACE_SIGNAL_DELIVERED)
    return (sig, 0, code, target.comm, target.pid, group, result)


# (system, event) -> (hits a second per CPU, its fields' maker: fn(rng, cpu,
# task, stack, activity) -> the fields, in the event's order)
RATED = {
    ("sched", "sched_switch"): (800, _switch),
    ("sched", "sched_waking"): (600, _wake),
    ("sched", "sched_wakeup"): (600, _wake),
    ("kmem", "kmem_cache_free"): (1450, _kmem_cache_free),
    ("kmem", "kfree"): (780, _kfree),
    ("kmem", "kmalloc"): (800, _kmalloc),
    ("kmem", "kmem_cache_alloc"): (1500, _kmem_cache_alloc),
    ("signal", "signal_generate"): (20, _signal_generate),
}


def rate(ev) -> int:
    """Hits a second per CPU of the event ``ev`` made up by the machine (0:
    none; it fires from a code path, or not at all)."""
    got = RATED.get((ev.system, ev.name))
    return got[0] if got is not None else 0


def make_fields(ev, rng, cpu: int, task, stack, act) -> tuple:
    """The fields of a made-up hit of ``ev`` by ``task`` at ``stack`` on
    ``cpu`` (``act``: the trace activity: the kernel, the tasks)."""
    return RATED[(ev.system, ev.name)][1](rng, cpu, task, stack, act)
