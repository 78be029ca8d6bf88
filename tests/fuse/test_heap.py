import gc
import time
import weakref

import pytest
import trio

from fakefs import sim
from fakefs.fuse import heap as heap_mod
from fakefs.fuse.heap import HeapKeeper
from fakefs.sim.files import write_file
from fakefs.sim.clock import ManualClock

T = "sys/kernel/tracing/"


def test_the_heap_is_trimmed_after_buffer_pages_are_given_back():
    k = sim.boot(seed=1, nr_cpus=2, clock=ManualClock(), host_kallsyms=False)
    heap = HeapKeeper(k)

    def request():
        heap.after_request()
        heap.trim_if_due()

    write_file(k, T + "buffer_size_kb", b"4096")      # grows: nothing freed
    request()
    assert heap.trims == 0
    write_file(k, T + "buffer_size_kb", b"1408")      # shrinks
    request()
    request()                                                # once per release
    assert heap.trims == 1
    k.tracing.instance_mkdir("a")
    request()
    assert heap.trims == 1
    k.tracing.instance_rmdir("a")
    request()                                                # the instance's buffers went
    assert heap.trims == 2


def test_the_trim_waits_for_an_idle_moment():
    """Not in the request that gave pages back (an rmdir would hold the
    lock of instances/ for it), but when the mount is idle."""
    k = sim.boot(seed=1, nr_cpus=2, clock=ManualClock(), host_kallsyms=False)
    keeper = HeapKeeper(k)
    k.tracing.instance_mkdir("a")

    async def main():
        async with trio.open_nursery() as nursery:
            nursery.start_soon(keeper.housekeeping)
            await trio.sleep(0.01)
            keeper.request_begins()                  # rmdir instances/a
            k.tracing.instance_rmdir("a")
            keeper.after_request()
            assert keeper.trims == 0 and keeper.trim_due
            keeper.request_ends()
            await trio.sleep(heap_mod.IDLE_S / 5)    # not idle long enough yet
            assert keeper.trims == 0
            await trio.sleep(5 * heap_mod.IDLE_S)
            assert keeper.trims == 1 and not keeper.trim_due
            nursery.cancel_scope.cancel()

    trio.run(main)


def test_the_housekeeping_waits_for_requests_under_way_but_not_for_blocked_readers():
    k = sim.boot(seed=1, nr_cpus=2, clock=ManualClock(), host_kallsyms=False)
    blocked = [0]
    keeper = HeapKeeper(k, lambda: blocked[0])
    k.tracing.instance_mkdir("a")

    async def main():
        async with trio.open_nursery() as nursery:
            nursery.start_soon(keeper.housekeeping)
            await trio.sleep(0.01)                   # it waits for a request
            keeper.request_begins()                  # a request under way
            k.tracing.instance_rmdir("a")
            keeper.after_request()
            await trio.sleep(5 * heap_mod.IDLE_S)
            assert keeper.busy() and keeper.trims == 0
            blocked[0] = 1                           # ... that waits for data
            await trio.sleep(5 * heap_mod.IDLE_S)
            assert not keeper.busy() and keeper.trims == 1
            nursery.cancel_scope.cancel()

    t0 = time.monotonic()
    trio.run(main)
    assert time.monotonic() - t0 < 5


@pytest.fixture
def collector():
    """A kernel and a keeper whose collector policy is on; the
    interpreter's collector put back after."""
    k = sim.boot(seed=1, nr_cpus=2, clock=ManualClock(), host_kallsyms=False)
    keeper = HeapKeeper(k)
    old = gc.get_threshold()
    keeper.take_over_collector()
    try:
        yield k, keeper
    finally:
        gc.enable()
        gc.unfreeze()
        gc.set_threshold(*old)


async def _requests(keeper, seconds):
    """Requests one after the other, never IDLE_S apart."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < seconds:
        keeper.request_begins()
        await trio.sleep(heap_mod.IDLE_S / 5)
        keeper.request_ends()


def test_the_daemons_collector_freezes_after_requests_and_collects_when_idle(monkeypatch,
                                                                            collector):
    _k, keeper = collector
    assert gc.get_threshold() == heap_mod.GC_THRESHOLD
    keeper.request_begins()
    junk = [[] for _ in range(heap_mod.FREEZE_MIN)]     # what a request leaves
    frozen = gc.get_freeze_count()
    keeper.request_ends()
    assert gc.get_freeze_count() >= frozen + heap_mod.FREEZE_MIN and keeper.unfrozen
    del junk

    async def main():
        async with trio.open_nursery() as nursery:
            nursery.start_soon(keeper.housekeeping)
            await trio.sleep(0.01)
            keeper.request_begins()
            keeper.request_ends()
            await trio.sleep(5 * heap_mod.IDLE_S)        # idle, but FULL_GC_S not over
            assert keeper.full_collections == 0
            # FULL_GC_S over (set so rather than slept: a loaded host would
            # stretch any sleep of this test past a short one)
            monkeypatch.setattr(heap_mod, "FULL_GC_S", 0.0)
            keeper.request_begins()                      # wakes the housekeeping
            keeper.request_ends()
            await trio.sleep(5 * heap_mod.IDLE_S)
            assert keeper.full_collections == 1 and not keeper.unfrozen
            nursery.cancel_scope.cancel()

    trio.run(main)


def test_a_stretch_of_requests_that_leaves_little_is_not_frozen(collector):
    """An instance's mkdir leaves ~100 tracked objects: not frozen, so once
    removed the collector frees the cycle it is without a full collection
    (frozen, only gc.unfreeze() + a full collection would)."""
    k, keeper = collector
    gc.disable()                         # no collection within the stretches
    keeper.request_begins()
    k.tracing.instance_mkdir("gone")
    tr = weakref.ref(k.tracing.instances["gone"])
    keeper.request_ends()
    assert keeper.freezes == 0
    keeper.request_begins()
    k.tracing.instance_rmdir("gone")
    keeper.request_ends()
    assert tr() is not None              # a cycle: refcounts do not free it
    gc.collect()
    assert tr() is None
    keeper.request_begins()
    junk = [[] for _ in range(heap_mod.FREEZE_MIN)]     # a catch-up's leftovers
    keeper.request_ends()
    assert keeper.freezes == 1 and keeper.unfrozen
    del junk
    keeper.request_begins()
    gc.collect(0)                        # a collection came: how much is left is not known
    keeper.request_ends()
    assert keeper.freezes == 2


def test_under_requests_that_never_pause_a_full_collection_comes_after_busy_gc_s(monkeypatch,
                                                                               collector):
    """What was frozen meanwhile (a stretch that left much, and an instance
    removed since) is collected once BUSY_GC_S went by, between requests."""
    k, keeper = collector
    monkeypatch.setattr(heap_mod, "BUSY_GC_S", 0.3)

    async def main():
        async with trio.open_nursery() as nursery:
            nursery.start_soon(keeper.housekeeping)
            await trio.sleep(0.01)
            keeper.request_begins()
            k.tracing.instance_mkdir("gone")
            tr = weakref.ref(k.tracing.instances["gone"])
            junk = [[] for _ in range(heap_mod.FREEZE_MIN)]
            keeper.request_ends()                    # frozen with the junk
            assert keeper.freezes == 1
            del junk
            k.tracing.instance_rmdir("gone")
            await _requests(keeper, 0.2)           # busy: no full collection yet
            gc.collect()                             # frozen: not freed by this
            assert keeper.busy() and keeper.full_collections == 0 and tr() is not None
            await _requests(keeper, 0.4)
            assert keeper.full_collections >= 1 and tr() is None
            nursery.cancel_scope.cancel()

    trio.run(main)
