"""Writes: long ones share the trio loop (pyfuse3 + trio run one handler at
a time), and one whose writer's work needs the machine further on (a
``Later``: a marker, a CPU taken down) has it moved there first.

A file whose operations have ``write_steps(f, data, pause)`` (a generator:
the write a word at a time, yielding where its state is consistent once
``pause()`` says so) is written a slice at a time: each slice runs at its
own instant (the kernel caught up first, as for any request) for at most
SLICE_S of wall time, then other requests run (``let_others_in``: a
command's requests one after the other, not one a slice).  A lock per file
keeps its other writers out meanwhile: the words of two writes never
interleave.
"""

from __future__ import annotations

import time

import trio

from ..sim.files import finish

SLICE_S = 0.01
GRACE_S = 0.001
GRACE_MAX_S = 0.02
# the waits for others' next requests take at most this share of what the
# write's slices took (a command sent every 10 ms would double a long write)
GRACE_SHARE = 0.2

_locks: dict[int, trio.Lock] = {}         # node inode -> its writers' lock


async def let_others_in(fs, budget: float = GRACE_MAX_S) -> float:
    """Between two slices: the requests that came meanwhile run, and while
    they keep coming (a command's next request comes a moment after the
    answer to its last: open, read, read again; its RELEASE ends it) the
    writer waits for the next one, GRACE_S at most each time and
    ``budget`` (at most GRACE_MAX_S) in all.  So a ``cat`` waits for one
    slice, not one a request.  Returns how long it waited so."""
    heap = fs.heap
    end = time.monotonic()
    # twice: trio runs a batch of tasks in random order, the writer may come
    # before a request's task woken with it (its turn begins the request)
    await trio.sleep(0)
    await trio.sleep(0)
    t0 = time.monotonic()
    budget = min(budget, GRACE_MAX_S)
    while heap.last_request >= end > fs.released_at and time.monotonic() - t0 < budget:
        end = time.monotonic()
        with trio.move_on_after(GRACE_S) as scope:
            await heap.next_request().wait()
        if scope.cancelled_caught:
            # the wait ran out: when the daemon itself was held up (its CPU
            # taken), a request ready meanwhile has not had its turn yet
            await trio.sleep(0)
            await trio.sleep(0)
    return time.monotonic() - t0


async def in_slices(fs, pay_slice) -> None:
    """Work a request would otherwise do at once, ``pay_slice()`` (a slice
    of it: True while more remains) until none remains, the requests that
    came meanwhile let in every SLICE_S: /proc/allocinfo's owed allocations
    before its read (``FileOperations.owed``), and what the machine owes
    before its next step after a setting's write (``Timekeeper.pay_debt``:
    the allocations' owed time once they are traced)."""
    t0 = time.monotonic()
    while pay_slice():
        if time.monotonic() - t0 >= SLICE_S:
            await let_others_in(fs)
            t0 = time.monotonic()


async def stepped_write(fs, f, data: bytes) -> int:
    """``f.node.fops.write(f, data)`` through ``fs`` (the FakeFS adapter),
    in slices where the operations allow it."""
    fops = f.node.fops
    steps = getattr(fops, "write_steps", None)
    if steps is None:
        until = await fs.observe(changes=True)
        with fs.at(until):
            answer = fops.write(f, data)
        # (a Later: its writer's work needs the machine further on)
        return finish(fs.kernel, answer)
    ino = f.node.ino
    lock = _locks.get(ino)
    if lock is None:
        lock = _locks[ino] = trio.Lock()
    t0 = 0.0
    given = -GRACE_MAX_S        # what the waits for others took, less a first credit
    worked = 0.0                # what the slices took

    def pause() -> bool:
        return time.monotonic() - t0 >= SLICE_S

    try:
        async with lock:
            gen = steps(f, data, pause)
            try:
                while True:
                    with fs.at(await fs.observe(changes=True)):
                        t0 = time.monotonic()
                        try:
                            next(gen)
                        except StopIteration as done:
                            return done.value
                        worked += time.monotonic() - t0
                    given += await let_others_in(fs, GRACE_SHARE * worked - given)
            finally:
                gen.close()
    finally:
        if _locks.get(ino) is lock and not lock.locked() and not lock.statistics().tasks_waiting:
            _locks.pop(ino, None)
