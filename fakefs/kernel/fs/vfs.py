"""The VFS calls behind a process's use of the simulated files
(fs/open.c ``vfs_open()``, fs/read_write.c ``vfs_read()``, fs/dcache.c
``dput()`` at the last close).

Whoever serves the files (the FUSE adapter) reports each open, read and
release with :func:`vfs_call`; while a kprobe is armed on one of those
functions, the call is a hit with the kernel's arguments: the file's
``struct path``/``struct file``/``struct dentry`` in memory, the dentry
naming the file (``d_name.name`` at +0x28, ``f_path.dentry`` at +0x48),
so that ``%pd``/``%pD`` arguments read the file's name.
"""

from __future__ import annotations

from ..trace.trace_kprobe_regs import ModelCall, caller_task
from ..trace.trace_probe_tmpl import DIRECT_MAP

DENTRY_NAME = 0x28                # offsetof(struct dentry, d_name.name)
FILE_PATH = 0x40                  # offsetof(struct file, f_path)
FILE_DENTRY = 0x48                # offsetof(struct file, f_path.dentry)
DENTRIES = DIRECT_MAP + 0x10000000
FILES = DIRECT_MAP + 0x20000000
USER_BUF = 0x00007ffc00000000
CALLERS = {
    "vfs_open": ("do_open", "path_openat", "do_filp_open", "do_sys_openat2", "__x64_sys_openat",
                 "do_syscall_64"),
    "vfs_read": ("ksys_read", "__x64_sys_read", "do_syscall_64"),
    "dput": ("__fput", "task_work_run", "syscall_exit_to_user_mode", "do_syscall_64"),
}


def vfs_probed(kernel, func: str) -> bool:
    """Is a kprobe armed on ``func`` (a hit of it would be traced)?  (Asked
    at every open, read and close: no probe registered at all is the answer
    of nearly every call, found without a lookup.)"""
    kp = kernel.kprobes
    return kp is not None and bool(kp.probes) and bool(kp.armed_on(func))


def vfs_call(kernel, func: str, node, pid: int, fh: int = 0, count: int = 0) -> None:
    """``func`` ran for the file ``node`` opened (``fh``) by ``pid``; nothing
    is made (not even the caller's task) unless a probe is on ``func``."""
    if not vfs_probed(kernel, func):
        return
    dentry = DENTRIES + node.ino * 0xc0
    name_ptr = dentry + 0x38                      # d_iname: the short name inline
    file = FILES + (fh & 0xfffff) * 0x100
    regions = {
        dentry + DENTRY_NAME: name_ptr.to_bytes(8, "little"),
        name_ptr: node.name.encode("latin-1")[:31] + b"\0",
        file + FILE_PATH: (DIRECT_MAP + 0x3000000).to_bytes(8, "little") + dentry.to_bytes(8, "little"),
    }
    if func == "vfs_open":
        args = (file + FILE_PATH, file)
    elif func == "vfs_read":
        args = (file, USER_BUF + (fh & 0xffff) * 0x1000, count, file + 0x98)
    else:
        args = (dentry,)
    task = caller_task(kernel, pid)
    kernel.kprobes.fire(func, CALLERS[func], pid % kernel.nr_cpus, task, ModelCall(args, regions))
