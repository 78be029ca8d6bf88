"""What the machine's running system allocates, and how long each object
lives: the recipes the allocation workload runs (``alloc_workload.py``
says when, and on which CPU), and the state the machine has reached when
somebody first looks (``steady_state``).

Each recipe calls the kernel's allocation paths (``kernel.alloc_calls``,
:class:`~fakefs.kernel.mm.alloc_calls.AllocCalls`) and draws what varies
from the workload's RNG: a readahead's pages, a file page and its buffer
heads, a directory walk's dentries and inodes, a short command's process,
a packet's buffers; each object's lifetime is drawn when it is allocated
and runs from the instant of the operation under way (``Lifetimes``:
``op_time``, the workload's clock).  What is due is freed by the workload
(``Lifetimes.due``).  A given seed replays one history: the boot's state
and the run time draw, in order, from the kernel's ``alloc_workload`` RNG.
"""

from __future__ import annotations

from ..kernel.lib._mt import expovariate
from ..kernel.mm.alloc_sites import lognormal
from ._event_queue import EventQueue

NS = 1_000_000_000


class Lifetimes:
    """The machine's objects that are due to be freed: (instant, seq, free
    function, object), the earliest first."""

    __slots__ = ("heap", "seq", "op_time")

    def __init__(self):
        self.heap = EventQueue()            # (instant, seq, fn, obj) by (instant, seq)
        self.seq = 0
        # when the operation under way happens, on the workload's clock
        # (boot's state: 0); a lifetime drawn runs from it
        self.op_time = 0

    def expire(self, lifetime_s: float, fn, obj) -> None:
        """``fn(obj)`` is due ``lifetime_s`` seconds after the operation under way."""
        self.seq += 1
        self.heap.push_entry((self.op_time + int(lifetime_s * NS), self.seq, fn, obj))

    def due(self, t1: int):
        """Take the frees due before ``t1``, each as (instant, fn, obj), in order."""
        pop = self.heap.pop_before
        while True:
            e = pop(t1)
            if e is None:
                return
            t, _s, fn, obj = e
            yield t, fn, obj

    def first(self):
        """The instant of the earliest object due, or None."""
        return self.heap.first_time()


def steady_state(calls, life: Lifetimes) -> None:
    """Fill the dynamic pools to their steady state (remaining lifetimes
    are exponential, so the state is the one a long run would reach): the
    page cache, dentries, the churning call sites' objects (``calls.hot``,
    picked at boot), a few commands, netlink sockets and open files."""
    rng = calls.rng
    expire = life.expire
    for _ in range(int(3600 / 12)):
        readahead(calls, life, rng)
    for _ in range(1500):
        filemap(calls, life, rng)
    for _ in range(int(12000 / 16)):
        dentries(calls, life, rng, 16, lognormal(rng, 600, 1.0, 5, 7200))
    for p, rate, mean in calls.hot:
        n = int(rate * mean)
        if n <= 8 or p.kind not in ("kmalloc", "cache", "page") or p.order:
            for _ in range(min(n, 200)):
                expire(expovariate(rng, 1.0 / mean), calls.free, calls.alloc_profile(p))
            continue
        # older objects in a few groups, each freed at once
        for part in _split(n, 8, rng):
            expire(expovariate(rng, 1.0 / mean), calls.free, calls.alloc_profile(p, part))
    for _ in range(4):
        short_process(calls, life, rng)
    for _ in range(60):
        expire(expovariate(rng, 1 / 30.0), calls.nl_close, calls.nl_sock())
    for _ in range(100):
        expire(expovariate(rng, 1 / 5.0), calls.slab.kfree, calls.cache_alloc("filp", "filp"))


def readahead(calls, life: Lifetimes, rng) -> None:
    """A readahead: a few pages into the page cache (and now and then a
    new node of the mapping's tree), kept a while."""
    n = rng.choice((4, 8, 16, 32))
    pages = calls.pages("readahead", n)
    t = expovariate(rng, 1 / 90.0)
    life.expire(t, calls.pa.free_pages, pages)
    if rng.random() < n / 64:
        life.expire(t, calls.slab.kfree, calls.cache_alloc("xas", "radix_tree_node"))


def filemap(calls, life: Lifetimes, rng) -> None:
    """``__filemap_get_folio``: a page cache page (a quarter with buffer heads)."""
    page = calls.pa.alloc_pages(calls.site("filemap"), 0)
    t = expovariate(rng, 1 / 60.0)
    life.expire(t, calls.pa.free_pages, page)
    if rng.random() < 0.25:
        life.expire(t, calls.slab.kfree, calls.cache_alloc("bh", "buffer_head"))


def dentries(calls, life: Lifetimes, rng, n: int, t: float) -> None:
    """A directory's ``n`` dentries and inodes (names, extent status), kept ``t`` s."""
    slab = calls.slab
    b1 = calls.bulk(calls.site("dentry"), "dentry", n)
    b2 = calls.bulk(calls.site("inode"), "ext4_inode_cache", n)
    life.expire(t, slab.kfree, b1)
    life.expire(t * 0.9, slab.kfree, b2)
    if rng.random() < 0.3:
        life.expire(t, slab.kfree, slab.kmalloc(calls.site("dname"), 48))
    if rng.random() < 0.5:
        life.expire(t, slab.kfree, calls.bulk(calls.site("es"), "ext4_extent_status", max(1, n // 4)))


def short_process(calls, life: Lifetimes, rng) -> None:
    """A short command: its process's memory, until it exits."""
    # the command it runs: nothing shows it, but it stays drawn so that
    # a seed keeps the history it has (the lessons print it)
    rng.choice(("sh", "sleep", "cat", "grep", "awk", "systemctl", "ps", "date", "sed"))
    rss = int(lognormal(rng, 60, 0.8, 8, 4000))
    proc = calls.tasks.new_process(rss=rss, nvma=int(lognormal(rng, 28, 0.3, 10, 90)))
    life.expire(expovariate(rng, 1 / 2.0), calls.tasks.exit_process, proc)


def skb(calls, life: Lifetimes, rng) -> None:
    """A packet in flight: its head and its data (small heads from their cache)."""
    s = calls.slab
    head = s.kmem_cache_alloc(calls.site("skb"), calls.caches["skbuff_head_cache"], node=0)
    if rng.random() < 0.4:
        data = s.kmem_cache_alloc(calls.site("skb_small"), calls.caches["skbuff_small_head"], node=0)
    else:
        data = s.kmalloc(calls.site("skb_data"), rng.choice((1024, 2048, 2048, 4096)), node=0)
    t = expovariate(rng, 1 / 0.03)
    life.expire(t, s.kfree, head)
    life.expire(t, s.kfree, data)


def _split(n: int, parts: int, rng) -> list:
    cuts = sorted(rng.randrange(1, n) for _ in range(parts - 1))
    out = []
    prev = 0
    for c in cuts + [n]:
        if c > prev:
            out.append(c - prev)
        prev = c
    return out
