"""A proc file's operations behind the VFS (fs/proc/inode.c: ``proc_reg_write()``).

Every proc file's operations derive from :class:`ProcOps` (``struct
proc_ops``): a write goes through ``proc_reg_write()``, which answers -EIO
for a file without a ``proc_write`` (those that have one override
:meth:`ProcOps.write`).  That call is the writer's: the function tracers
see it (kernel/trace/ftrace_requests.py).
"""

from __future__ import annotations

import errno

from ...trace.ftrace_requests import request
from ..pseudo import FileOperations, KernelError, after_that

# the way of a write(2) into a proc file's proc_reg_write(), outermost first
PROC_WRITE_PATH = ("entry_SYSCALL_64_after_hwframe", "do_syscall_64", "x64_sys_call",
                   "__x64_sys_write", "ksys_write", "vfs_write", "proc_reg_write")


class ProcOps(FileOperations):
    """``struct proc_ops`` without ``proc_write``."""

    def write(self, f, data: bytes) -> int:
        kernel = f.node.tree.kernel if f.node.tree is not None else None
        traced = request(kernel, f, PROC_WRITE_PATH, -errno.EIO) if kernel is not None else None
        return after_that(traced, _eio)


def _eio():
    raise KernelError(errno.EIO)
