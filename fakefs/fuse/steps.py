"""Long writes share the trio loop (pyfuse3 + trio run one handler at a time).

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

SLICE_S = 0.01
GRACE_S = 0.001
GRACE_MAX_S = 0.02

_locks: dict[int, trio.Lock] = {}         # node inode -> its writers' lock


async def let_others_in(heap) -> None:
    """Between two slices: the requests that came meanwhile run, and while
    they keep coming (a command's next request comes a moment after the
    answer to its last: open, read, read again) the writer waits for the
    next one, GRACE_S at most each time and GRACE_MAX_S in all.  So a
    ``cat`` waits for one slice, not one a request."""
    end = time.monotonic()
    # twice: trio runs a batch of tasks in random order, the writer may come
    # before a request's task woken with it (its turn begins the request)
    await trio.sleep(0)
    await trio.sleep(0)
    t0 = end
    while heap.last_request >= end and end - t0 < GRACE_MAX_S:
        end = time.monotonic()
        with trio.move_on_after(GRACE_S):
            await heap.next_request().wait()


async def stepped_write(fs, f, data: bytes) -> int:
    """``f.node.fops.write(f, data)`` through ``fs`` (the FakeFS adapter),
    in slices where the operations allow it."""
    fops = f.node.fops
    steps = getattr(fops, "write_steps", None)
    if steps is None:
        with fs.at(await fs.observe(changes=True)):
            return fops.write(f, data)
    ino = f.node.ino
    lock = _locks.get(ino)
    if lock is None:
        lock = _locks[ino] = trio.Lock()
    t0 = 0.0

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
                    await let_others_in(fs.heap)
            finally:
                gen.close()
    finally:
        if _locks.get(ino) is lock and not lock.locked() and not lock.statistics().tasks_waiting:
            _locks.pop(ino, None)
