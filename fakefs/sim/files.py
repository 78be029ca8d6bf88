"""A file read or written on the simulated machine from outside a mount
(benches, captures, tests): the machine runs to the instant of the call
first, as the FUSE adapter does for a request (``FakeFS.observe``), then
the kernel's file operations run at that instant (``kernel.now``).

The kernel's file operations never catch the machine up themselves: time
has one owner, the caller (issue 33, DM6).  ``fs.pseudo.kernel_read`` and
``kernel_write`` are the operations alone, for a caller that has done it.
"""

from __future__ import annotations

import os

from ..kernel.fs.pseudo import Later, kernel_read, kernel_write


def finish(kernel, answer):
    """An operation's answer, the machine moved on first where it says so
    (``Later``: the instant its caller's work needs); each ``then()`` runs
    at the request's instant again (``kernel.now`` as the operation left it)."""
    t = kernel.now
    while isinstance(answer, Later):
        kernel.timekeeper.advance_to(answer.t)
        kernel.now = t
        answer = answer.then()
    return answer


def read_file(kernel, path: str, size: int = 1 << 26) -> bytes:
    """``kernel_read`` of ``path`` (from the tree's root) at the clock's now."""
    kernel.timekeeper.run_until_now()          # (and the kernel at its instant)
    return kernel_read(kernel.tree, path, size)


def write_file(kernel, path: str, data: bytes, flags: int = os.O_WRONLY | os.O_TRUNC) -> int:
    """``kernel_write`` of ``data`` to ``path`` at the clock's now."""
    kernel.timekeeper.run_until_now()
    return finish(kernel, kernel_write(kernel.tree, path, data, flags))
