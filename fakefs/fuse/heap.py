"""The daemon's memory housekeeping: freed memory given back to the
system, the cycle collector kept off what requests leave.  It waits until
no request is under way but those waiting for data (blocked reads) and
none has started for IDLE_S, so that no request waits for it.  (The ring
buffers' sub-buffers are their bytes in one mapping a CPU, which a reset,
a resize or a removed instance unmaps: nothing to pack.)

The model frees a shrunk or removed buffer's entries at once, but glibc's
allocator keeps the freed chunks for reuse unless they sit at the top of
its heap, so the daemon's RSS would stay where the largest buffer took it.
After a request that gave buffer pages back to the simulated machine (the
account's ``given_back`` moved), ``malloc_trim(0)`` returns the free pages
of the heap, once the mount is idle: it runs in the main
loop (``python -m fakefs.bench.memory --in-process`` times it), and right after an ``rmdir`` it would
hold the VFS's lock of ``instances/`` that long, which every other mkdir
and rmdir there waits for.  Without glibc there is nothing to call and the
memory stays with the process.

Python's cycle collector (``take_over_collector``, the daemon's): a full
collection walks every object the model holds (frames, caches, tables:
~90-200 ms with everything traced), and with the default thresholds one
came every few seconds of a catch-up, a pause of every request under way.
The model makes no reference cycles (``tests/kernel/test_frames.py``), so
what a stretch of requests leaves (from one with none under way to the
next) is frozen when it ends, if it left FREEZE_MIN tracked objects or
more, or a collection came meanwhile (``gc.freeze()``: the collector no
longer walks it; refcounts still free it); the young generation is
collected every GC_THRESHOLD[0] surviving allocations, and a full
collection (of cycles that other code may have made) runs at most every
FULL_GC_S, while the mount is idle.

Small leftovers are not frozen: a removed instance is a reference cycle
(its files point at their directory and their array, its tracers at the
array: 85 tracked objects, ~20 KB), and frozen at the end of its mkdir
nothing but a full collection would free it.  Under 50 shells making and
removing ~230 instances a second the mount is never idle for IDLE_S and
the daemon grew ~37 MB every 10 s; unfrozen, the young collections free
them (it then grew ~3.5 MB every 10 s, presumably the instances alive
when a stretch with a collection in it was frozen).  What is frozen all
the same (a catch-up's stretch) is collected between requests once
BUSY_GC_S went by with no idle moment: a pause of every request under way
(with BUSY_GC_S at 20 s the slowest request of that load took 484 ms),
so rarer than FULL_GC_S; at the rate above ~40 MB wait for it.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import time

import trio

IDLE_S = 0.05
GC_THRESHOLD = (50_000, 10, 10)
FULL_GC_S = 60.0
BUSY_GC_S = 120.0
FREEZE_MIN = 1000


def _malloc_trim():
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return libc.malloc_trim
    except (OSError, AttributeError):
        return None


class HeapKeeper:
    """Trims the heap when ring buffers gave pages back;
    keeps the cycle collector off what requests leave (the daemon's)."""

    __slots__ = ("kernel", "blocked", "seen", "trim_due", "trims", "last_request", "inflight",
                 "wakeup", "_trim", "collector", "unfrozen", "full_gc_at", "full_collections",
                 "stretch_counts", "freezes")

    def __init__(self, kernel, blocked=lambda: 0):
        self.kernel = kernel
        self.blocked = blocked   # () -> requests under way that wait for data
        self.seen = 0            # given_back when last looked
        self.trim_due = False    # pages were given back since the last trim
        self.trims = 0
        self.last_request = 0.0  # time.monotonic() when the last request began
        self.inflight = 0        # requests under way
        self.wakeup: trio.Event | None = None
        self._trim = _malloc_trim()
        self.collector = False   # the cycle collector is ours (take_over_collector)
        self.unfrozen = False    # something was frozen since the last full collection
        self.full_gc_at = 0.0    # time.monotonic() of the last full collection
        self.full_collections = 0
        self.stretch_counts = (0, 0, 0)   # gc.get_count() when the stretch of requests began
        self.freezes = 0

    def take_over_collector(self) -> None:
        """The daemon's policy for the cycle collector (see the module)."""
        gc.collect()
        gc.freeze()
        gc.set_threshold(*GC_THRESHOLD)
        self.collector = True
        self.full_gc_at = time.monotonic()

    def request_begins(self) -> None:
        self.last_request = time.monotonic()
        if self.inflight <= self.blocked():
            self.stretch_counts = gc.get_count()
        self.inflight += 1
        if self.wakeup is not None:
            self.wakeup.set()

    def next_request(self) -> trio.Event:
        """Set when the next request begins (what the housekeeping and the
        runner sleep on)."""
        ev = self.wakeup
        if ev is None or ev.is_set():
            ev = self.wakeup = trio.Event()
        return ev

    def request_ends(self) -> None:
        self.inflight -= 1
        if self.collector and self.inflight <= self.blocked():
            young, gen1, gen2 = gc.get_count()
            was = self.stretch_counts
            if young - was[0] >= FREEZE_MIN or (gen1, gen2) != was[1:]:
                gc.freeze()
                self.unfrozen = True
                self.freezes += 1

    def collect_if_due(self, busy: bool = False) -> None:
        """A full collection, if something was frozen and FULL_GC_S went by
        since the last (call it while idle), or BUSY_GC_S (between requests
        that left no idle moment)."""
        wait = BUSY_GC_S if busy else FULL_GC_S
        if self.collector and self.unfrozen and time.monotonic() - self.full_gc_at >= wait:
            gc.unfreeze()
            gc.collect()
            gc.freeze()
            self.unfrozen = False
            self.full_gc_at = time.monotonic()
            self.full_collections += 1

    def busy(self) -> bool:
        return self.inflight > self.blocked() or time.monotonic() - self.last_request < IDLE_S

    def after_request(self) -> None:
        """Note whether the request gave buffer pages back (the trim waits
        for an idle moment: ``trim_if_due``)."""
        tracing = self.kernel.tracing
        acct = tracing.buffer_memory() if tracing is not None else None
        if acct is None or acct.given_back == self.seen:
            return
        self.seen = acct.given_back
        self.trim_due = self._trim is not None

    def trim_if_due(self) -> None:
        if self.trim_due:
            self.trim_due = False
            self._trim(0)
            self.trims += 1

    async def housekeeping(self) -> None:
        """Trim and collect while no request comes; sleep until one does
        once nothing is left to do."""
        while True:
            await self.next_request().wait()
            while self.busy():
                self.collect_if_due(busy=True)    # no idle moment for that long
                await trio.sleep(IDLE_S)
            self.trim_if_due()
            self.collect_if_due()
