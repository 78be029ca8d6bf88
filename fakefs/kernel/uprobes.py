"""Uprobes (kernel/events/uprobes.c): breakpoints in the code of a file.

A uprobe is an (inode, offset) with consumers; registering one checks what
``uprobe_register()`` checks (a file whose pages can be read, the offset
within the file, a reference counter offset aligned to a short).  The
files are the real machine's: a probe names a file as the process writing
the command sees it (``Kernel.host_file``: the daemon resolves the path in
the writer's root and working directory; in-process, the path as it is).

When do they fire?  The simulated kernel does not run the real processes'
code; it only learns that a followed process executed a file (its exec,
with the file's identity).  What every run of an executable executes is
known from the file itself (``fs/binfmt_elf.py``): its entry point, then
its ``_init`` (``DT_INIT``), which returns.  So a probe at one of those
offsets of an executable fires in each followed process that executes it,
at the instants the program gets there (after its dynamic loader); a
return probe fires when ``_init`` returns (the entry point never returns).
A probe anywhere else in a file never fires here, nor one in a shared
library, nor for processes the mount does not follow.
"""

from __future__ import annotations

import errno
import os
import stat

from .fs.binfmt_elf import start_points_of_fd
from .fs.pseudo import KernelError
from .trace.trace_probe_tmpl import mix64

PAGE = 4096
ELF_ET_DYN_BASE = 0x555555554000       # 2/3 of TASK_SIZE: where a PIE is loaded
PIE_RANDOM_PAGES = 1 << 28             # mmap_rnd_bits = 28 (x86_64)
LIBC_AREA = 0x7f0000000000
# how long after its execve() returns the new program gets there
LOADER_NS = 260_000                    # ld.so: mapping and relocating the libraries
STATIC_NS = 4_000
INIT_AFTER_ENTRY_NS = 18_000           # _start -> __libc_start_main -> call_init -> _init
INIT_RUN_NS = 600                      # _init itself (frame_dummy and a few calls)
LIBC_START_CALL_INIT = 0x2724a         # where _init returns to, in libc (drawn base)
# the machine's hits reach the trace through the replay of its tracepoint
# hits (in time order with the rest, per CPU): an internal one carries them
UPROBE_TP = "\0uprobe"


class HostFile:
    """A file of the real machine a probe holds (``struct path``): its
    identity (device, inode), size, type, whether its pages can be read
    (``a_ops->read_folio``: not so for the mount's own files) and an open
    descriptor to read its ELF headers; ``close()`` lets it go."""

    def __init__(self, st, fd: int | None = None, readable: bool = True):
        self.dev = st.st_dev
        self.ino = st.st_ino
        self.size = st.st_size
        self.regular = stat.S_ISREG(st.st_mode)
        self.readable = readable
        self.fd = fd
        self._start = False

    @property
    def key(self) -> tuple[int, int]:
        return (self.dev, self.ino)

    def start_points(self):
        """Where every run of it starts (binfmt_elf.StartPoints) or None."""
        if self._start is False:
            self._start = start_points_of_fd(self.fd) if self.fd is not None else None
        return self._start

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


def open_plain(pid: int, path: str) -> HostFile:
    """``kern_path(path, LOOKUP_FOLLOW)`` for a kernel without a daemon to
    resolve paths in the writer's view: the path as this process sees it."""
    try:
        st = os.stat(path)
    except OSError as e:
        raise KernelError(e.errno or errno.ENOENT)
    fd = None
    if stat.S_ISREG(st.st_mode):
        try:
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            fd = None
    return HostFile(st, fd)


class Uprobe:
    """``struct uprobe``: an (inode, offset) and its consumers."""

    __slots__ = ("file", "offset", "ref_ctr_offset", "consumers")

    def __init__(self, file: HostFile, offset: int, ref_ctr_offset: int):
        self.file = file
        self.offset = offset
        self.ref_ctr_offset = ref_ctr_offset
        self.consumers: list = []


class Uprobes:
    """The registered uprobes, by inode; what an executed file's start runs."""

    def __init__(self, kernel):
        self.kernel = kernel
        self.by_inode: dict[tuple[int, int], list[Uprobe]] = {}
        self.hooked = None                 # the trace activity replaying the hits

    def fire(self, task, cpu: int, t: int, handler) -> None:
        """The machine ran a probed instruction of ``task`` at ``t``: the
        handler runs where the machine's hits are replayed (at once
        without a replay)."""
        if self.hooked is not None:
            self.kernel.tracepoints.get(UPROBE_TP).fire(cpu, t, task.pid, 0, 0, (handler,))
        else:
            handler(task, cpu, t)

    @staticmethod
    def _replayed(cpu, ts, task, flags, pc, args, stack) -> None:
        args[0](task, cpu, ts)

    def _hook(self, on: bool) -> None:
        act = self.kernel.trace_hits
        if on and self.hooked is None and act is not None:
            act.add_tp_hook(UPROBE_TP, self._replayed)
            self.hooked = act
        elif not on and self.hooked is not None:
            self.hooked.remove_tp_hook(UPROBE_TP, self._replayed)
            self.hooked = None

    def register(self, file: HostFile, offset: int, ref_ctr_offset: int, consumer) -> Uprobe:
        """``uprobe_register()``: the uprobe (shared with other consumers of
        the same place), or KernelError."""
        if not file.readable:
            raise KernelError(errno.EIO)
        if offset > file.size:
            raise KernelError(errno.EINVAL)
        if ref_ctr_offset % 2:
            raise KernelError(errno.EINVAL)
        probes = self.by_inode.setdefault(file.key, [])
        up = next((u for u in probes if u.offset == offset), None)
        if up is None:
            up = Uprobe(file, offset, ref_ctr_offset)
            probes.append(up)
        elif up.ref_ctr_offset != ref_ctr_offset:      # alloc_uprobe(): a mismatch
            if not up.consumers:
                probes.remove(up)
            raise KernelError(errno.EINVAL)
        up.consumers.append(consumer)
        self._hook(True)
        return up

    def unregister(self, up: Uprobe, consumer) -> None:
        if consumer in up.consumers:
            up.consumers.remove(consumer)
        if not up.consumers:
            probes = self.by_inode.get(up.file.key, [])
            if up in probes:
                probes.remove(up)
            if not probes:
                self.by_inode.pop(up.file.key, None)
        if not self.by_inode:
            self._hook(False)

    def program_start(self, exe: tuple[int, int], pid: int) -> list:
        """A followed process executed the file ``exe`` (device, inode):
        the probe hits its start makes, as (delay after execve() returned,
        handler(task, cpu, t)) in time order."""
        probes = self.by_inode.get(exe)
        if not probes:
            return []
        start = probes[0].file.start_points()
        if start is None:
            return []
        seed = mix64(self.kernel.seed ^ pid ^ exe[1])
        base = ELF_ET_DYN_BASE + (seed % PIE_RANDOM_PAGES) * PAGE if start.pie else 0
        t_entry = LOADER_NS if start.interp else STATIC_NS
        t_init = t_entry + INIT_AFTER_ENTRY_NS
        libc = LIBC_AREA + (mix64(seed) % (1 << 26)) * PAGE
        out = []
        for up in probes:
            if up.offset == start.entry:
                where = ((t_entry, base + start.entry_vaddr, None),)
            elif up.offset == start.init:
                init = base + start.init_vaddr
                where = ((t_init, init, None), (t_init + INIT_RUN_NS, init, libc + LIBC_START_CALL_INIT))
            else:
                continue
            for delay, vaddr, ret in where:
                for c in list(up.consumers):
                    if (ret is not None) == c.is_return:
                        out.append((delay, _hit(c, vaddr, ret)))
        out.sort(key=lambda x: x[0])
        return out


def _hit(consumer, vaddr: int, ret):
    if ret is None:
        return lambda task, cpu, t: consumer.handler(task, cpu, t, vaddr)
    return lambda task, cpu, t: consumer.ret_handler(task, cpu, t, vaddr, ret)
