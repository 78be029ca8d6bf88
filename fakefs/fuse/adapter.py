"""The one thin pyfuse3 adapter: the simulated kernel's pseudo-file tree as FUSE operations.

Rules this layer keeps (see shared/research/anchors.md §0):

* every file is opened with ``direct_io`` and no page cache, reported with
  ``st_size`` 0 (tracefs does the same) unless its operations give a size;
* entries and attributes are cached by the kernel for long, and told to it
  when the kernel model changes them (``notify.py``);
* truncate/append are decided from the open flags (handled by the kernel
  model through ``File.trunc`` / ``File.append``), never from write offsets;
* blocking reads wait on what their file's ``WouldBlock`` names, with one
  ticker for all of them (``waiters.py``), and give up with EINTR when the
  opener has a pending signal (pyfuse3 never sees FUSE_INTERRUPT); before
  waiting they look up the file's *current* O_NONBLOCK (``fcntl(F_SETFL)``
  after open) in the opener's fdinfo;
* while somebody waits (blocked read, poll), the mount is watched: once it
  is detached (``umount -l``, ``fusermount3 -u -z``) the daemon stops as on
  SIGTERM instead of holding the waiters forever;
* ownership: the mounting user is the simulated machine's root (see
  ``ownership.py``); the caller's uid reaches the kernel's ``open``;
* before any request touches kernel state the kernel catches up with the
  wall clock in small steps, yielding to other requests between steps;
* a handler never lets a Python exception escape: KernelError becomes its
  errno, anything else is logged and becomes EIO.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import select
import stat
import time

import pyfuse3
import trio

from ..kernel.fs.pseudo import DirNode, File, FileNode, FileOperations, WouldBlock
from ..kernel.fs.namei import lookup_name
from ..kernel.fs.vfs import instance_dirs_made, open_call, vfs_call, vfs_probed
from . import noflush, notify, syscall_events
from .handler import handler
from .fsinfo import FsInfo
from .heap import HeapKeeper
from .pacing import REQUEST_CAME, REQUEST_WAIT_S, STEP_WALL_S, Bursts, Pacer, settle_host_events
from .hostlinks import HostLink, HostLinks
from .ownership import Ownership, default_owner
from .procfd import caller_open_args, current_nonblock, dev_attached
from .steps import in_slices, stepped_write
from .waiters import Waiters

log = logging.getLogger("fakefs.fuse")

# how often the mount's presence is checked while somebody waits
DETACH_CHECK_INTERVAL = 0.2


def _flushes(fops) -> bool:
    """The file's operations do something at FLUSH (``->flush``)."""
    return type(fops).flush is not FileOperations.flush


class _At:
    """``with``: the kernel at an instant (``kernel.now``; see ``FakeFS.at``)."""

    __slots__ = ("kernel", "until")

    def __init__(self, kernel, until):
        self.kernel = kernel
        self.until = until

    def __enter__(self) -> None:
        self.kernel.now = self.until

    def __exit__(self, *exc) -> None:
        pass                # (the next request gives its own instant)


_NOW = contextlib.nullcontext()       # at(None): the request's entry instant (``handler``)


class FakeFS(FsInfo, pyfuse3.Operations):
    supports_dot_lookup = True
    enable_writeback_cache = False
    enable_acl = False

    def __init__(self, kernel, ownership: Ownership | None = None, host=None,
                 links: HostLinks | None = None):
        super().__init__()
        self.kernel = kernel
        self.tree = kernel.tree
        # who owns what (the daemon passes the tracefs root and -o uid/gid/mode)
        self.own = ownership or Ownership(*default_owner())
        self.files: dict[int, File] = {}
        self.next_fh = 1
        self.poll_waiters: dict[int, pyfuse3.PollHandle] = {}
        self.poll_wakeup: trio.Event | None = None
        self.mounted = False
        self.terminating = False
        # major:minor of the mount once mounted (None: not watched)
        self.dev: str | None = None
        # requests waiting for data (blocked reads, see waiters.py)
        self.blocked = 0
        self.waiter_wakeup: trio.Event | None = None
        # what the daemon does when the mount goes away under waiters
        self.on_detached = self.terminate
        # the directory an rmdir request is removing (see rmdir)
        self.vfs_removing: DirNode | None = None
        self.tree.listeners.append(self._tree_changed)
        # the real processes using the mount, as the simulated machine's
        # (cnproc.HostWatch, where the host reports them)
        self.host = host
        self.host_settle: int | None = None   # their events done by this instant
        # the host's entries shown beside the tree's (fakefs sandbox's /proc)
        self.links = links
        self.heap = HeapKeeper(kernel, lambda: self.blocked)
        self.pacer = Pacer(kernel.clock)                  # how long a step of a catch-up is
        self.bursts = Bursts()          # each command's requests wait on the machine once
        self.waiters = Waiters(self)                      # the blocked reads
        self.released_at = 0.0                            # time.monotonic() of the last RELEASE
        self.syscalls = syscall_events.CallerSyscalls(self)   # the callers' calls as events

    def terminate(self) -> None:
        """The daemon is going away (SIGTERM, SIGINT, umount): blocked readers
        and pollers are answered at once instead of holding the main loop.
        Safe to call from a signal handler: it only sets a flag and wakes
        the kernel's pollers."""
        self.terminating = True
        for ph in list(self.poll_waiters.values()):
            try:
                ph.notify()
            except Exception:
                log.debug("poll notify failed", exc_info=True)
        self.poll_waiters.clear()

    # --- helpers -----------------------------------------------------------
    def host_seen(self, ctx, changes: bool = True) -> None:
        """A request: its caller, and whatever the real processes the
        machine follows did before it, become the simulated machine's.
        While the machine stands still (nothing sees it) a request that
        changes nothing leaves them queued (the host watch bounds the
        queue): only what can change what is seen needs them first; a
        request served where a lagging machine got has them pulled in there
        (``observe``)."""
        if self.host is None:
            return
        if ctx is not None:
            self.host.caller(ctx.pid)
        driver = self.kernel.driver
        if not changes and driver is not None and driver.frozen and not self.host.backlogged() \
                and not self.kernel.machine_seen():
            return
        settle = self.host.drain()
        if settle is not None and (self.host_settle is None or settle > self.host_settle):
            self.host_settle = settle

    async def observe(self, changes: bool = False, wait_s: float | None = None,
                      pause=None) -> int:
        """Let the simulated kernel catch up with the instant of the request,
        a step at a time, letting other requests in after each step's worth
        of time (pacing.STEP_WALL_S); what the followed real processes did
        before it is done by then (``changes``: it may change settings).
        Returns the instant it is served at: its own, or in a paced mount,
        once it has waited ``wait_s`` on a machine that fell behind, the
        instant the machine reached (``Pacer.served_at``: what the real
        processes did before it is pulled in there); the runner goes on from
        there.  A request waits REQUEST_WAIT_S from when it came, all its
        command's catch-ups together (``pacing.Bursts``), and not at all on
        a machine running late (``Pacer.running_late``: a step there moved
        it a millisecond of the 50 or more it lagged).  ``pause``: what it
        awaits between its steps (the runner's), else ``trio.sleep(0)``."""
        self.host_seen(None, changes)
        k = self.kernel
        start = t0 = time.monotonic()
        until = came = k.clock.now_ns()      # the request came now: no later
        wait = wait_s
        if wait is None:
            arrived = REQUEST_CAME.get()
            if arrived is not None:
                start = arrived
            wait = 0.0 if self.pacer.running_late(k, until) else REQUEST_WAIT_S
        while True:
            now = time.monotonic()
            served = self.pacer.served_at(k, until) if now - start >= wait else None
            if served is not None:
                if served < until and wait_s is None and self.host is not None:
                    pulled = self.host.pull_in(served)
                    if pulled is not None:
                        self.host_settle = min(pulled, self.host_settle or pulled)
                until = served
                break
            target = self.pacer.target(k, until)
            if not self.pacer.step(k, target) and target >= until:
                break
            if time.monotonic() - t0 >= STEP_WALL_S:
                await (trio.sleep(0) if pause is None else pause())
                t0 = time.monotonic()
        self.pacer.note_lag(k, came)
        settle, self.host_settle = self.host_settle, None
        if settle is not None:
            self.host_settle = settle_host_events(k, until, settle)
        return until

    def at(self, until: int | None):
        """The kernel serves the request at the instant it came (``until``,
        from ``observe``: other requests served while it awaited set their
        own; None: the instant the handler gave at the request's entry).
        Only around code that does not await."""
        return _NOW if until is None else _At(self.kernel, until)

    def node(self, inode: int):
        n = self.tree.nodes.get(inode)
        if n is None and self.links is not None:
            n = self.links.node(inode)
        if n is None:
            raise pyfuse3.FUSEError(errno.ENOENT)
        return n

    def attrs(self, n) -> pyfuse3.EntryAttributes:
        a = pyfuse3.EntryAttributes()
        a.st_ino = n.ino
        a.generation = 0
        if isinstance(n, HostLink):
            a.entry_timeout = a.attr_timeout = notify.LINK_TIMEOUT
        else:
            a.entry_timeout = notify.ENTRY_TIMEOUT
            a.attr_timeout = notify.ATTR_TIMEOUT
        a.st_mode = n.mode
        a.st_nlink = 2 + n.nr_subdirs() if isinstance(n, DirNode) else 1
        a.st_rdev = 0
        size = 0
        if isinstance(n, HostLink):          # root's, as the host's procfs has them
            a.st_uid = a.st_gid = 0
            size = 0 if n.reader else len(n.target)
        else:
            a.st_uid = self.own.uid_of(n)
            a.st_gid = self.own.gid_of(n)
        if isinstance(n, FileNode):
            sizer = getattr(n.fops, "size", None)
            if sizer is not None:
                size = sizer(n)
        a.st_size = size
        a.st_blksize = 4096
        a.st_blocks = 0
        ns = int(n.mtime * 1e9)
        a.st_atime_ns = a.st_mtime_ns = a.st_ctime_ns = ns
        return a

    def _tree_changed(self, parent, name, node, added) -> None:
        if not added:
            self.own.forget(node.ino)
        if self.mounted and parent is not None and node is not self.vfs_removing:
            notify.tree_changed(parent, name, node, added)

    def caller_tid(self, request: str, args: tuple, kwargs: dict) -> int:
        """The thread that sent ``request``: its context's pid; for READ,
        WRITE and FLUSH (pyfuse3 gives them none) the file's opener."""
        if request in ("read", "write", "flush"):
            f = self.files.get(args[0])
            return f.pid if f is not None else 0
        ctx = kwargs.get("ctx", args[-1] if args else None)
        return getattr(ctx, "pid", 0) or 0

    def file(self, fh: int) -> File:
        f = self.files.get(fh)
        if f is None:
            raise pyfuse3.FUSEError(errno.EBADF)
        return f

    # --- attributes and lookup ---------------------------------------------
    @handler
    async def getattr(self, inode, ctx=None):
        return self.attrs(self.node(inode))

    def entry(self, parent_inode, name: bytes) -> tuple[DirNode, str]:
        """(directory, name) of a request on an entry, past the VFS's lookup's
        check (namei.lookup_name: ENAMETOOLONG where the filesystem says so)."""
        parent = self.node(parent_inode)
        if not isinstance(parent, DirNode):
            raise pyfuse3.FUSEError(errno.ENOTDIR)
        lookup_name(parent, name)
        return parent, os.fsdecode(name)

    @handler
    async def lookup(self, parent_inode, name, ctx=None):
        self.host_seen(ctx, changes=False)
        parent, name = self.entry(parent_inode, name)
        if name == ".":
            return self.attrs(parent)
        if name == "..":
            return self.attrs(parent.parent or parent)
        child = parent.lookup(name)
        if child is None and self.links is not None:
            child = self.links.lookup(parent, name)
        if child is None:
            raise pyfuse3.FUSEError(errno.ENOENT)
        return self.attrs(child)

    @handler
    async def readlink(self, inode, ctx):
        n = self.node(inode)
        if not isinstance(n, HostLink):
            raise pyfuse3.FUSEError(errno.EINVAL)
        return os.fsencode(self.links.readlink(n, ctx.pid))

    @handler
    async def setattr(self, inode, attr, fields, fh, ctx):
        n = self.node(inode)
        if isinstance(n, HostLink):
            raise pyfuse3.FUSEError(errno.EPERM)
        if (fields.update_mode or fields.update_uid or fields.update_gid) and \
                isinstance(n, FileNode) and not n.fops.setattr_allowed:
            raise pyfuse3.FUSEError(errno.EPERM)
        if fields.update_mode:
            n.mode = stat.S_IFMT(n.mode) | (attr.st_mode & 0o7777)
        # the VFS checked chown/chgrp rights already (default_permissions)
        if fields.update_uid or fields.update_gid:
            self.own.chown(n, attr.st_uid if fields.update_uid else None,
                           attr.st_gid if fields.update_gid else None)
            if self.mounted and self.own.is_anchor(n):
                notify.attrs_below(n)
        # size changes (truncate -s) are accepted and ignored, as tracefs does
        return self.attrs(n)

    @handler
    async def forget(self, inode_list):
        return None

    # --- directories -----------------------------------------------------
    @handler
    async def opendir(self, inode, ctx):
        n = self.node(inode)
        if not isinstance(n, DirNode):
            raise pyfuse3.FUSEError(errno.ENOTDIR)
        return inode

    @handler
    async def readdir(self, fh, start_id, token):
        n = self.node(fh)
        entries = list(n.children.values())
        if self.links is not None:
            entries += self.links.entries(n)
        for i in range(start_id, len(entries)):
            child = entries[i]
            if not pyfuse3.readdir_reply(token, child.name.encode(), self.attrs(child), i + 1):
                break

    @handler
    async def releasedir(self, fh):
        return None

    @handler
    async def mkdir(self, parent_inode, name, mode, ctx):
        self.host_seen(ctx, changes=False)      # a new instance records nothing yet
        parent, name = self.entry(parent_inode, name)
        if name in parent.children:
            raise pyfuse3.FUSEError(errno.EEXIST)
        until = await self.observe() if parent.dops.observes(parent, name) else None
        with self.at(until):
            parent.dops.mkdir(parent, name)
            instance_dirs_made(self.kernel, name, ctx.pid)
        child = parent.lookup(name)
        if child is None:
            raise pyfuse3.FUSEError(errno.EIO)
        return self.attrs(child)

    @handler
    async def rmdir(self, parent_inode, name, ctx):
        self.host_seen(ctx, changes=False)      # what goes sees nothing any more
        parent, name = self.entry(parent_inode, name)
        child = parent.lookup(name)
        if child is None:
            raise pyfuse3.FUSEError(errno.ENOENT)
        if not isinstance(child, DirNode):
            raise pyfuse3.FUSEError(errno.ENOTDIR)
        until = await self.observe() if parent.dops.observes(parent, name) else None
        # the VFS drops this dentry itself when we answer: no notification
        # (it would take the directory's lock once more per rmdir)
        self.vfs_removing = child
        try:
            with self.at(until):
                parent.dops.rmdir(parent, name)
        finally:
            self.vfs_removing = None
        self.heap.after_request()

    @handler
    async def create(self, parent_inode, name, mode, flags, ctx):
        raise pyfuse3.FUSEError(errno.EACCES)

    @handler
    async def mknod(self, parent_inode, name, mode, rdev, ctx):
        raise pyfuse3.FUSEError(errno.EACCES)

    @handler
    async def unlink(self, parent_inode, name, ctx):
        raise pyfuse3.FUSEError(errno.EPERM)

    @handler
    async def rename(self, parent_inode_old, name_old, parent_inode_new, name_new, flags, ctx):
        raise pyfuse3.FUSEError(errno.EPERM)

    @handler
    async def symlink(self, parent_inode, name, target, ctx):
        raise pyfuse3.FUSEError(errno.EPERM)

    @handler
    async def link(self, inode, new_parent_inode, new_name, ctx):
        raise pyfuse3.FUSEError(errno.EPERM)

    # --- files -------------------------------------------------------------
    @handler
    async def open(self, inode, flags, ctx):
        self.host_seen(ctx, changes=flags & os.O_ACCMODE != os.O_RDONLY or bool(flags & os.O_TRUNC))
        n = self.node(inode)
        if isinstance(n, DirNode):
            raise pyfuse3.FUSEError(errno.EISDIR)
        f = File(n, flags, ctx.pid, self.own.sim_uid(ctx.uid))
        mode = flags & os.O_ACCMODE
        if vfs_probed(self.kernel, "do_sys_openat2"):
            # do_sys_openat2() is entered before the path walk (FUSE says an open
            # comes only now): its arguments are what the caller passed
            with self.at(await self.observe()):
                got = caller_open_args(ctx.pid)
                if got is not None:
                    open_call(self.kernel, ctx.pid, got.nr, got.dfd, got.filename, got.name,
                              got.flags, got.mode)
        if vfs_probed(self.kernel, "vfs_open") or (n.fops.observes and mode != os.O_WRONLY) \
                or mode != os.O_RDONLY:
            with self.at(await self.observe()):     # a probed vfs_open() comes after the rest
                vfs_call(self.kernel, "vfs_open", n, ctx.pid, self.next_fh)
                n.fops.open(f)
        elif mode == os.O_RDONLY:
            n.fops.open(f)
        fh = self.next_fh
        self.next_fh += 1
        self.files[fh] = f
        if not _flushes(n.fops):
            noflush.mark(fh)            # its FLUSH would do nothing
        return pyfuse3.FileInfo(fh=fh, direct_io=True, keep_cache=False,
                                nonseekable=n.fops.nonseekable)

    async def _pay_owed(self, f, off: int) -> None:
        """What a read of ``f`` at ``off`` would settle at once (``owed``),
        paid a slice at a time first, others let in between."""
        owed = f.node.fops.owed(f, off)
        if owed is not None:
            await in_slices(self, owed.pay_slice)

    @handler
    async def read(self, fh, off, size):
        f = self.file(fh)
        fops = f.node.fops
        if fops.read_observes(f, off) or vfs_probed(self.kernel, "vfs_read"):
            until = await self.observe()
        else:
            until = None
        await self._pay_owed(f, off)
        try:
            with self.at(until):
                vfs_call(self.kernel, "vfs_read", f.node, f.pid, fh, size)
                return fops.read(f, off, size)
        except WouldBlock as e:
            # the flags now, not at open (tracing_wait_pipe checks f_flags)
            if current_nonblock(f.pid, f.node.ino, self.dev, f.flags):
                raise pyfuse3.FUSEError(errno.EAGAIN)
            waitq = e.waitq
        self.blocked += 1
        try:
            while True:
                await self.waiters.wait(fh, f.pid, waitq)
                until = await self.observe()
                await self._pay_owed(f, off)
                try:
                    with self.at(until):
                        return f.node.fops.read(f, off, size)
                except WouldBlock as e:
                    waitq = e.waitq
        finally:
            self.blocked -= 1

    @handler
    async def write(self, fh, off, buf):
        f = self.file(fh)
        data = bytes(buf)
        n = await stepped_write(self, f, data)      # long writes let others in
        if not f.node.fops.writes_data:
            self.pacer.restart()                     # (a setting may change what steps cost)
            # what the machine then owes before its next step, paid by the
            # write: the machine steps on from the write's instant (left to
            # the catch-ups, a request was served before the slices, and 4
            # ftracetest hist tests missed the forks they had just made)
            await in_slices(self, self.kernel.timekeeper.pay_debt)
        if f.node.fops.moves_time:
            # (in steps, others let in; all that can be seen: the move is the work)
            await self.observe()
        self.heap.after_request()
        return n

    @handler
    async def flush(self, fh):
        f = self.files.get(fh)
        if f is not None and _flushes(f.node.fops):
            with self.at(await self.observe(changes=True)):
                f.node.fops.flush(f)
            self.waiters.wake_file(fh)     # e.g. trace_pipe_raw's reader no longer waits

    @handler
    async def fsync(self, fh, datasync):
        return None

    @handler
    async def release(self, fh):
        self.released_at = time.monotonic()   # a command is done (steps.let_others_in)
        f = self.files.pop(fh, None)
        self.poll_waiters.pop(fh, None)
        if f is not None:
            f.node.fops.release(f)
            if vfs_probed(self.kernel, "dput"):       # __fput(): release, then dput()
                with self.at(await self.observe()):
                    vfs_call(self.kernel, "dput", f.node, f.pid, fh)

    @handler
    async def poll(self, inode, fh, poll_handle, ctx):
        f = self.file(fh)
        with self.at(await self.observe()):
            mask = f.node.fops.poll(f)
        if not mask and self.terminating:
            return select.POLLIN | select.POLLERR
        if not mask and poll_handle is not None:
            self.poll_waiters[fh] = poll_handle
            if self.poll_wakeup is not None:
                self.poll_wakeup.set()
            if self.waiter_wakeup is not None:
                self.waiter_wakeup.set()              # the detach watcher
        return mask

    def check_attached(self) -> bool:
        """Is the mount still there (anywhere, bind mounts included)?  A
        lazy umount leaves the connection alive as long as files are open:
        once it is gone the waiters would hold the daemon forever, so it
        stops (``on_detached``)."""
        if self.dev is None or self.terminating or dev_attached(self.dev):
            return True
        log.warning("the mount was detached with waiters: stopping")
        self.on_detached()
        return False

    async def detach_watcher(self) -> None:
        """While a poll waits, ``check_attached`` every 200 ms (blocked
        reads have the waiters' ticker do it)."""
        if self.dev is None:
            return
        while not self.terminating:
            if not self.poll_waiters:
                self.waiter_wakeup = trio.Event()
                await self.waiter_wakeup.wait()
                continue
            await trio.sleep(DETACH_CHECK_INTERVAL)
            if not self.check_attached():
                return

    async def poll_watcher(self) -> None:
        """Wake pollers whose file became ready: asked after every request
        and every catch-up of the runner (``wake_pollers``: as the kernel's
        commit wakes its waiters, a reader learns of a full watermark before
        the buffer overflows), and every 100 ms while somebody polls (what
        becomes ready with time alone); an idle mount does not wake up at
        all."""
        while True:
            if not self.poll_waiters:
                self.poll_wakeup = trio.Event()
                await self.poll_wakeup.wait()
            await trio.sleep(0.1)
            self.wake_pollers(await self.observe())

    def wake_pollers(self, until: int | None = None) -> None:
        """The pollers whose file is ready at ``until`` are woken (None: as
        far as the machine has been simulated; the end of a request or a
        runner's catch-up simulates nothing more for them)."""
        if until is None:
            until = self.kernel.sim_time
        for fh, ph in list(self.poll_waiters.items()):
            f = self.files.get(fh)
            try:
                with self.at(until):
                    ready = f is None or f.node.fops.poll(f)
            except Exception:
                ready = True
            if ready:
                del self.poll_waiters[fh]
                try:
                    ph.notify()
                except Exception:
                    log.debug("poll notify failed", exc_info=True)
