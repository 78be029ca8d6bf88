"""The tests a run in shards (``--jobs``) has left, shared by the shards.

Each shard's inner stage (its own daemon, mount namespace and ftracetest)
claims the next tests when it is free and runs ftracetest on them: a shard
that drew cheap tests takes more, and a shard started late (``make test``'s
second, once the unit tests are done: ``--more-jobs-when``) takes what is
left.  A claim takes a part of what is left (guided self-scheduling: the
tests left over ``divisor``, at least one): long runs first, so that few
ftracetest runs pay its set-up and clean-up (each ends with
``finish_ftrace``, an ``initialize_ftrace``: a grep of every event's
trigger and filter, ~1 s; one ftracetest a test made the suite's CPU 1.65x),
and single tests at the end, so that the shards end together.  The queue
is a file of two numbers, the next test's index and the count, read and
moved on under an exclusive ``flock`` (the shards run in other mount
namespaces, on the same file system).  ``stop()`` leaves nothing more to
claim (``--stop-fail``).
"""

from __future__ import annotations

import fcntl
from pathlib import Path


class ShardQueue:
    """The queue file at ``path``."""

    __slots__ = ("path",)

    def __init__(self, path: Path | str):
        self.path = Path(path)

    @classmethod
    def create(cls, path: Path | str, count: int) -> "ShardQueue":
        q = cls(path)
        q.path.write_text("0 %d\n" % count)
        return q

    def _locked(self, change):
        """``change(next, count)`` -> (its answer, the new next) under the lock."""
        with open(self.path, "r+") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX)
            nxt, count = (int(x) for x in fh.read().split())
            got, nxt = change(nxt, count)
            fh.seek(0)
            fh.write("%d %d\n" % (nxt, count))
            fh.truncate()
            fh.flush()
            return got

    def claim(self, divisor: int) -> tuple[int, int] | None:
        """The indices [start, end) of the next tests to run (claimed): what
        is left over ``divisor``, at least one; None when none is left."""
        def take(nxt, count):
            if nxt >= count:
                return None, nxt
            end = nxt + max(1, -(-(count - nxt) // divisor))
            return (nxt, end), end
        return self._locked(take)

    def left(self) -> int:
        """How many tests nobody has claimed yet."""
        return self._locked(lambda nxt, count: (count - nxt, nxt))

    def stop(self) -> None:
        """Nothing more is claimed."""
        self._locked(lambda nxt, count: (None, count))
