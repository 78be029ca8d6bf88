"""The VFS calls behind a process's use of the simulated files
(fs/open.c ``do_sys_openat2()`` and ``vfs_open()``, fs/read_write.c
``vfs_read()``, fs/dcache.c ``dput()`` at the last close,
``tracefs_create_dir()`` for a new instance's directories).

Whoever serves the files (the FUSE adapter) reports each open, read and
release with :func:`vfs_call`; while a kprobe is armed on one of those
functions, the call is a hit with the kernel's arguments: the file's
``struct path``/``struct file``/``struct dentry`` in memory, the dentry
naming the file (``d_name.name`` at +0x28, ``f_path.dentry`` at +0x48),
so that ``%pd``/``%pD`` arguments read the file's name.
"""

from __future__ import annotations

from ..cpu import online_cpu
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
# an open system call's way into do_sys_openat2(), by its number
OPEN_CALLERS = {2: ("__x64_sys_open", "do_syscall_64"), 257: ("__x64_sys_openat", "do_syscall_64"),
                437: ("__x64_sys_openat2", "do_syscall_64")}
OPEN_HOW = DIRECT_MAP + 0x40000000       # the open_how built on the caller's kernel stack
# mkdir of a tracing instance: instance_mkdir() from tracefs' mkdir
INSTANCE_MKDIR = ("instance_mkdir", "tracefs_syscall_mkdir", "vfs_mkdir", "do_mkdirat",
                  "__x64_sys_mkdir", "do_syscall_64")
# who calls tracefs_create_dir() for each directory of a new instance
TRACEFS_DIR_CALLERS = {
    "instance": ("trace_array_create_dir", "trace_array_create_systems", "trace_array_create")
    + INSTANCE_MKDIR,
    "options": ("trace_options_init_dentry", "create_trace_options_dir", "init_tracer_tracefs",
                "trace_array_create_dir", "trace_array_create_systems", "trace_array_create")
    + INSTANCE_MKDIR,
    "per_cpu": ("tracing_dentry_percpu", "tracing_init_tracefs_percpu", "init_tracer_tracefs",
                "trace_array_create_dir", "trace_array_create_systems", "trace_array_create")
    + INSTANCE_MKDIR,
    "cpu": ("tracing_init_tracefs_percpu", "init_tracer_tracefs", "trace_array_create_dir",
            "trace_array_create_systems", "trace_array_create") + INSTANCE_MKDIR,
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
    kernel.kprobes.fire(func, CALLERS[func], online_cpu(kernel, pid % kernel.nr_cpus), task,
                        ModelCall(args, regions))


def open_call(kernel, pid: int, nr: int, dfd: int, filename: int, name: bytes | None,
              flags: int | None, mode: int | None) -> None:
    """``do_sys_openat2(dfd, filename, how)`` of an open of one of the
    files by ``pid``, with what its system call ``nr`` passed (read from
    the host, see fuse/procfd.py): the name at its user address (when it
    could be read), the ``struct open_how`` of flags and mode built on the
    kernel stack (openat2()'s own is copied from user memory: not known,
    zeros).  Nothing is made unless a probe is on the function."""
    if not vfs_probed(kernel, "do_sys_openat2"):
        return
    how = OPEN_HOW + (pid & 0xffff) * 0x40
    regions = {how: ((flags or 0).to_bytes(8, "little") + (mode or 0).to_bytes(8, "little")
                     + bytes(8))}
    user = {filename: name + b"\0"} if name is not None else None
    args = (dfd & ((1 << 64) - 1), filename, how)
    kernel.kprobes.fire("do_sys_openat2", OPEN_CALLERS.get(nr, OPEN_CALLERS[257]),
                        online_cpu(kernel, pid % kernel.nr_cpus), caller_task(kernel, pid),
                        ModelCall(args, regions, user))


def instance_dirs_made(kernel, name: str, pid: int) -> None:
    """A tracing instance ``name`` was made by ``pid``'s mkdir: its
    directories came from ``tracefs_create_dir(name, parent)``, in the
    kernel's order (the instance, options, per_cpu, cpuN); each is a hit
    of a probe there, with the name string and the parent's dentry."""
    if not vfs_probed(kernel, "tracefs_create_dir"):
        return
    tr = kernel.tracing.instances.get(name) if kernel.tracing is not None else None
    if tr is None:
        return
    parents = {"instances": kernel.tracing.root.children["instances"], name: tr.dir}
    per_cpu = tr.dir.children.get("per_cpu")
    dirs = [(name, "instances", "instance"), ("options", name, "options"),
            ("per_cpu", name, "per_cpu")]
    dirs += [("cpu%d" % cpu, "per_cpu", "cpu") for cpu in range(kernel.nr_cpus)]
    task = caller_task(kernel, pid)
    for i, (dname, parent, kind) in enumerate(dirs):
        pnode = per_cpu if parent == "per_cpu" else parents[parent]
        parent_dentry = DENTRIES + (pnode.ino if pnode is not None else 0) * 0xc0
        name_ptr = DIRECT_MAP + 0x30000000 + (tr.dir.ino & 0xffff) * 0x400 + 0x20 * i
        call = ModelCall((name_ptr, parent_dentry), {name_ptr: dname.encode("latin-1") + b"\0"})
        kernel.kprobes.fire("tracefs_create_dir", TRACEFS_DIR_CALLERS[kind],
                            online_cpu(kernel, pid % kernel.nr_cpus), task, call)
