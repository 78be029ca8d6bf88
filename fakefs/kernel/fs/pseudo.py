"""Pseudo-file nodes, declared the way tracefs/debugfs/procfs declare them.

A node has a name, a mode, a parent, an opaque ``data`` pointer (the
kernel's ``inode->i_private``) and, for regular files, an operations object
modelled on ``struct file_operations``: ``open``, ``show`` (seq_file),
``read``, ``write``, ``poll`` and ``release``.  Errors are raised as
:class:`KernelError` carrying an errno value, exactly like a handler
returning ``-EINVAL``.

Nothing here knows about FUSE; ``fakefs.fuse`` adapts this tree.
"""

from __future__ import annotations

import errno
import os
import stat

POLLIN = 0x001
POLLOUT = 0x004
POLLRDNORM = 0x040
POLLWRNORM = 0x100
DEFAULT_POLLMASK = POLLIN | POLLOUT | POLLRDNORM | POLLWRNORM

# modes used by kernel/trace/trace.h (TRACE_MODE_WRITE / TRACE_MODE_READ)
TRACE_MODE_WRITE = 0o640
TRACE_MODE_READ = 0o440


class KernelError(Exception):
    """An errno returned by a kernel handler (``return -EINVAL``)."""

    def __init__(self, err: int, msg: str | None = None):
        super().__init__(err, msg or os.strerror(err))
        self.errno = err


class WouldBlock(KernelError):
    """A read found nothing yet.  Blocking opens wait on ``waitq`` and retry."""

    def __init__(self, waitq=None):
        super().__init__(errno.EAGAIN)
        self.waitq = waitq


class Later:
    """A file operation's answer that needs the machine further on: its
    caller moves the machine to the instant ``t`` (``Timekeeper.advance_to``),
    then calls ``then()`` for the answer, which may be another ``Later``.
    The kernel model never moves the machine itself (issue 33, DM6): an
    operation whose caller runs on the machine (a marker's writer, a CPU
    taken down, a module's init) hands that wait to whoever drives it
    (``fuse.steps.stepped_write``, ``sim.files.finish``)."""

    __slots__ = ("t", "then")

    def __init__(self, t: int, then):
        self.t = t
        self.then = then


def later(kernel, t: int, then):
    """``then()`` now if the kernel has been simulated to ``t``, else a
    :class:`Later` for it."""
    return then() if kernel.sim_time >= t else Later(t, then)


def after_that(answer, then):
    """``then()`` once ``answer`` (a :class:`Later`, or anything else: done
    already) is done."""
    if isinstance(answer, Later):
        return Later(answer.t, lambda: after_that(answer.then(), then))
    return then()


class File:
    """An open file (``struct file``): flags seen at open, private data, and
    the opener's uid (``f_cred``; 0 is root, capable of everything)."""

    __slots__ = ("node", "flags", "pid", "uid", "private", "seq_buf")

    def __init__(self, node: "FileNode", flags: int, pid: int = 0, uid: int = 0):
        self.node = node
        self.flags = flags
        self.pid = pid
        self.uid = uid
        self.private = None
        self.seq_buf: bytes | None = None

    @property
    def data(self):
        return self.node.data

    @property
    def readable(self) -> bool:
        return (self.flags & os.O_ACCMODE) in (os.O_RDONLY, os.O_RDWR)

    @property
    def writable(self) -> bool:
        return (self.flags & os.O_ACCMODE) in (os.O_WRONLY, os.O_RDWR)

    @property
    def trunc(self) -> bool:
        """The kernel idiom: ``(f_mode & FMODE_WRITE) && (f_flags & O_TRUNC)``."""
        return self.writable and bool(self.flags & os.O_TRUNC)

    @property
    def append(self) -> bool:
        return bool(self.flags & os.O_APPEND)

    @property
    def nonblock(self) -> bool:
        return bool(self.flags & os.O_NONBLOCK)


class FileOperations:
    """Base of every pseudo-file's operations (``struct file_operations``).

    The default read is ``seq_read``: the text returned by :meth:`show` is
    generated when a read starts at offset 0 and served from that snapshot
    until the next read at offset 0 (seq_file + ``lseek(0)`` semantics).
    Files without a write handler return EINVAL, as tracefs does.
    """

    nonseekable = False
    # what a read shows depends on what the simulated machine has done: its
    # caller moves the machine to the read's instant first (the operations
    # never do).  Settings and fixed texts say False, and are answered at
    # once, even while another request's catch-up is under way.
    observes = True
    # a write moves the simulated time on (the virtual clock's control
    # file): the request returns once the machine has got there, so the
    # requests after it find nothing left to simulate
    moves_time = False
    # a write records data (trace_marker, /dev/kmsg): it changes no setting,
    # so what the machine's steps cost does not change with it
    writes_data = False
    # chmod/chown allowed (tracefs, most of procfs); /proc/sys refuses (EPERM)
    setattr_allowed = True

    def open(self, f: File) -> None:
        pass

    def show(self, f: File):
        """Return the whole content (str or bytes) for seq_file reads."""
        return b""

    def read(self, f: File, off: int, size: int) -> bytes:
        return seq_read(self, f, off, size)

    def read_observes(self, f: File, off: int) -> bool:
        """Whether a read at ``off`` shows what the machine did up to that
        read: a new snapshot (offset 0) or a stream of an ``observes`` file;
        a read further on goes on in the text taken at offset 0."""
        return self.observes and (off == 0 or self.nonseekable)

    def owed(self, f: File, off: int):
        """The work owed (an ``owed.Settle``) that a read of ``f`` at ``off``
        would do at once before it shows (/proc/allocinfo's at offset 0,
        where its text is made; each /dev/kmsg read's: the allocations'
        owed time), for its caller to do a slice at a time first; or None."""
        return None

    def write(self, f: File, data: bytes) -> int:
        """The bytes taken, or a :class:`Later` for them when the writer's
        work needs the machine further on (its caller finishes it)."""
        raise KernelError(errno.EINVAL)

    def poll(self, f: File) -> int:
        return DEFAULT_POLLMASK

    def flush(self, f: File) -> None:
        """Every ``close()`` of a descriptor of the open file, before it
        returns (``release`` may come later)."""

    def release(self, f: File) -> None:
        pass


def seq_read(fops: FileOperations, f: File, off: int, size: int) -> bytes:
    if off == 0 or f.seq_buf is None:
        content = fops.show(f)
        f.seq_buf = content.encode() if isinstance(content, str) else bytes(content)
    return f.seq_buf[off:off + size]


class DirOperations:
    """``inode_operations`` of a directory that allows mkdir/rmdir (instances/)."""

    def mkdir(self, parent: "DirNode", name: str) -> None:
        raise KernelError(errno.EPERM)

    def observes(self, parent: "DirNode", name: str) -> bool:
        """Whether a mkdir or rmdir of ``name`` must first see what the
        machine did up to its instant (as ``FileOperations.observes``)."""
        return True

    def rmdir(self, parent: "DirNode", name: str) -> None:
        raise KernelError(errno.EPERM)


class Node:
    __slots__ = ("name", "mode", "parent", "data", "ino", "tree", "mtime",
                 "uid", "gid", "__weakref__")

    def __init__(self, name: str, mode: int, parent: "DirNode | None", data=None):
        self.name = name
        self.mode = mode
        self.parent = parent
        self.data = data
        self.ino = 0
        self.tree: PseudoTree | None = None
        self.mtime = 0.0            # (the tree's wall time when it is attached)
        self.uid = 0
        self.gid = 0

    @property
    def is_dir(self) -> bool:
        return stat.S_ISDIR(self.mode)

    def path(self) -> str:
        parts = []
        n = self
        while n is not None and n.parent is not None:
            parts.append(n.name)
            n = n.parent
        return "/" + "/".join(reversed(parts))


class FileNode(Node):
    __slots__ = ("fops",)

    def __init__(self, name, mode, parent, data, fops: FileOperations):
        super().__init__(name, stat.S_IFREG | (mode & 0o7777), parent, data)
        self.fops = fops


class DirNode(Node):
    """A directory.  Its entries may be created on first use (eventfs does
    that for ``events/``): ``populate(node)`` runs once, the first time the
    entries are looked at; until then ``subdirs`` tells how many of them
    will be directories (for ``st_nlink``)."""

    __slots__ = ("_children", "dops", "populate", "subdirs")

    def __init__(self, name, mode, parent, data=None, dops: DirOperations | None = None,
                 populate=None, subdirs: int = 0):
        super().__init__(name, stat.S_IFDIR | (mode & 0o7777), parent, data)
        self._children: dict[str, Node] = {}
        self.dops = dops or DirOperations()
        self.populate = populate
        self.subdirs = subdirs

    @property
    def children(self) -> dict:
        fill = self.populate
        if fill is not None:
            self.populate = None
            fill(self)
        return self._children

    def created_children(self):
        """The entries that exist now (populates nothing)."""
        return self._children.values()

    def nr_subdirs(self) -> int:
        if self.populate is not None:
            return self.subdirs
        return sum(1 for c in self._children.values() if c.is_dir)

    def lookup(self, name: str) -> Node | None:
        return self.children.get(name)

    def walk(self, relpath: str) -> Node | None:
        node: Node | None = self
        for part in relpath.strip("/").split("/"):
            if not part:
                continue
            if not isinstance(node, DirNode):
                return None
            node = node.children.get(part)
            if node is None:
                return None
        return node


class PseudoTree:
    """One superblock: inode numbers, the root, and change listeners.

    Listeners are told ``(parent, name, node, added)`` whenever the kernel
    adds or removes an entry on its own, so a FUSE adapter can invalidate
    its dentry cache.
    """

    ROOT_INO = 1

    def __init__(self, root_mode: int = 0o755, kernel=None):
        self._next_ino = self.ROOT_INO
        self.nodes: dict[int, Node] = {}
        self.listeners: list = []
        self.kernel = kernel        # the kernel whose files these are (``s_fs_info``)
        self.root = DirNode("", root_mode, None)
        self._attach(self.root)

    def wall(self) -> float:
        """The kernel's wall time now (``current_time()``: its boot's wall
        time and the instant its caller gave; 0 for a tree of no kernel)."""
        k = self.kernel
        return k.clock.boot_wall + k.now / 1e9 if k is not None else 0.0

    def _attach(self, node: Node) -> None:
        node.ino = self._next_ino
        self._next_ino += 1
        node.tree = self
        node.mtime = self.wall()
        self.nodes[node.ino] = node

    def add(self, parent: DirNode, node: Node) -> Node:
        if node.name in parent.children:
            raise KernelError(errno.EEXIST)
        self._attach(node)
        parent.children[node.name] = node
        parent.mtime = self.wall()
        for cb in self.listeners:
            cb(parent, node.name, node, True)
        return node

    def remove(self, node: Node) -> None:
        """Remove ``node`` and its subtree; listeners hear about ``node`` only."""
        parent = node.parent
        self._forget(node)
        if parent is not None and parent.children.get(node.name) is node:
            del parent.children[node.name]
            parent.mtime = self.wall()
        for cb in self.listeners:
            cb(parent, node.name, node, False)

    def _forget(self, node: Node) -> None:
        if isinstance(node, DirNode):
            node.populate = None
            for child in node.created_children():
                self._forget(child)
        self.nodes.pop(node.ino, None)

    def create_file(self, name: str, mode: int, parent: DirNode, data,
                    fops: FileOperations) -> FileNode:
        return self.add(parent, FileNode(name, mode, parent, data, fops))

    def create_dir(self, name: str, parent: DirNode, mode: int = 0o755, data=None,
                   dops: DirOperations | None = None, populate=None,
                   subdirs: int = 0) -> DirNode:
        return self.add(parent, DirNode(name, mode, parent, data, dops, populate, subdirs))

    def makedirs(self, path: str, mode: int = 0o755) -> DirNode:
        """``mkdir -p``: ``mode`` applies to the last directory; missing
        parents get 0755 (``sys/`` above a 0700 ``tracing/`` stays 0755)."""
        node = self.root
        parts = path.strip("/").split("/")
        for i, part in enumerate(parts):
            child = node.children.get(part)
            if child is None:
                child = self.create_dir(part, node, mode if i == len(parts) - 1 else 0o755)
            node = child
        return node


# --- the kernel reading and writing its own files (kernel_read/kernel_write) ---
def _open(tree: PseudoTree, path: str, flags: int):
    node = tree.root.walk(path)
    if not isinstance(node, FileNode):
        raise KernelError(errno.ENOENT if node is None else errno.EISDIR)
    f = File(node, flags)
    node.fops.open(f)
    return node, f


def kernel_read(tree: PseudoTree, path: str, size: int = 1 << 26) -> bytes:
    """Open ``path`` (relative to the root), read up to ``size`` bytes from
    offset 0, release."""
    node, f = _open(tree, path, os.O_RDONLY)
    try:
        return node.fops.read(f, 0, size)
    finally:
        node.fops.release(f)


def kernel_write(tree: PseudoTree, path: str, data: bytes,
                 flags: int = os.O_WRONLY | os.O_TRUNC) -> int:
    """Open ``path`` with ``flags``, write ``data`` once, release (a
    ``Later`` answer is its caller's to finish: ``sim.files.finish``)."""
    node, f = _open(tree, path, flags)
    try:
        return node.fops.write(f, data)
    finally:
        node.fops.release(f)
