"""``/proc/profile`` and ``/sys/kernel/profiling`` (kernel/profile.c, kernel/ksysfs.c).

``/proc/profile`` exists only while profiling is on.  It is binary: the
sampling step as a native 32-bit word, then one 32-bit counter per step of
kernel text.  Unlike other proc files it has a real size,
``(1 + prof_len) * 4``, which ``readprofile`` obtains with
``lseek(SEEK_END)`` before reading it all in one ``read()``;
:meth:`ProfileOps.size` gives it to the FUSE layer.  Reads honour the
offset (any partial read is the same bytes a full read would give).

Writing resets every counter, except that on an SMP kernel a write of
exactly four bytes is a profiling-timer multiplier; x86 cannot change its
profiling timer rate, so that write fails with EINVAL and resets nothing
(``readprofile -M``).  The mode is 0644: only root writes.
"""

from __future__ import annotations

import errno

from ...profile import profiler
from ..pseudo import FileOperations, KernelError
from .base import proc_create


class ProfileOps(FileOperations):
    def read(self, f, off, size):
        return f.data.read(off, size)

    def write(self, f, data):
        p = f.data
        if p.smp and len(data) == 4:
            # setup_profiling_timer(): x86 has no way to change it
            raise KernelError(errno.EINVAL)
        p.reset()
        return len(data)

    def size(self, node) -> int:
        return node.data.size


PROFILE_OPS = ProfileOps()


def create_proc_profile(kernel) -> None:
    """Create /proc/profile if profiling is on (and it is not there yet)."""
    p = profiler(kernel)
    if not p.prof_on or p.proc_entry is not None:
        return
    p.proc_entry = proc_create(kernel, "profile", 0o644, None, PROFILE_OPS, p)


class SysProfilingOps(FileOperations):
    """``/sys/kernel/profiling``: ``prof_on``; a write enables profiling at
    run time with the ``profile=`` syntax (EEXIST once it is on)."""

    def show(self, f):
        return "%d\n" % profiler(f.data).prof_on

    def write(self, f, data):
        kernel = f.data
        p = profiler(kernel)
        if p.prof_on:
            raise KernelError(errno.EEXIST)
        p.setup(data.decode("latin-1"))
        ret = p.init()
        if ret:
            raise KernelError(-ret)
        create_proc_profile(kernel)
        return len(data)


def sysfs_profiling_init(kernel) -> None:
    """The attribute came with runtime enabling (3.11); 2.6 kernels lack it."""
    if not kernel.config.version_at_least(3, 11):
        return
    d = kernel.tree.makedirs("sys/kernel")
    if "profiling" not in d.children:
        kernel.tree.create_file("profiling", 0o644, d, kernel, SysProfilingOps())


def proc_profile_init(kernel) -> None:
    """The initcall after profile_init: ``/proc/profile`` (when profiling is
    on) and ``/sys/kernel/profiling``."""
    if not kernel.config.options.get("CONFIG_PROFILING", True):
        return
    create_proc_profile(kernel)
    sysfs_profiling_init(kernel)
