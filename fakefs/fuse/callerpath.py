"""Files named by the processes that use the mount, as they see them.

A uprobe command names a file (``p /bin/sh:0x4000``): the kernel looks the
path up in the writer's root and working directory (``kern_path()``).
The daemon runs elsewhere (another mount namespace, maybe another root):
:class:`CallerFiles` walks the path from ``/proc/PID/root`` (a relative one
from ``/proc/PID/cwd``) one component at a time, following symbolic links
as the writer would (an absolute target starts again at the writer's
root), and gives a :class:`~fakefs.kernel.uprobes.HostFile` with the
file's identity and an open descriptor.

A component that is this very mount in the writer's view (its
``/proc/PID/mountinfo`` lists our device there, maybe a bind of a
subdirectory) is looked up in the simulated kernel's tree instead: the
daemon must never send a lookup through its own mount while it serves a
request (it would wait on itself).  Such a file's pages cannot be read by
uprobes (tracefs and procfs have no ``read_folio``).
"""

from __future__ import annotations

import errno
import os
import stat

from ..kernel.fs.pseudo import DirNode, KernelError
from ..kernel.uprobes import HostFile
from .procfd import unescape_mount_path

MAXSYMLINKS = 40


class _TreeStat:
    """What ``stat`` says of a node of the simulated tree."""

    def __init__(self, node, dev: int):
        self.st_mode = node.mode
        self.st_ino = node.ino
        self.st_dev = dev
        self.st_size = 0


class CallerFiles:
    """``open(pid, path)``: the file ``path`` names for the process ``pid``
    (KernelError with the lookup's errno)."""

    def __init__(self, tree, dev: str | None):
        self.tree = tree
        self.dev = dev                     # "major:minor" of the mount (None: unknown)

    def _ours(self, pid: int) -> list[tuple[str, str]]:
        """(mount point, directory of the tree mounted there) of each mount
        of ours in the writer's view, the last mounted last."""
        if self.dev is None:
            return []
        out = []
        try:
            with open("/proc/%d/mountinfo" % pid) as fh:
                for line in fh:
                    f = line.split()
                    if len(f) > 4 and f[2] == self.dev:
                        out.append((unescape_mount_path(f[4]), unescape_mount_path(f[3])))
        except OSError:
            pass
        return out

    def open(self, pid: int, path: str) -> HostFile:
        if not path:
            raise KernelError(errno.ENOENT)
        root = "/proc/%d/root" % pid if pid else ""
        mounts = self._ours(pid) if pid else []
        todo = [c for c in path.split("/") if c]
        done: list[str] = []
        if not path.startswith("/"):
            try:
                cwd = os.readlink("/proc/%d/cwd" % pid if pid else "/proc/self/cwd")
            except OSError as e:
                raise KernelError(e.errno or errno.ENOENT)
            done = [c for c in cwd.split("/") if c]
        links = 0
        while todo:
            comp = todo.pop(0)
            if comp == ".":
                continue
            if comp == "..":
                if done:
                    done.pop()
                continue
            here = "/" + "/".join(done + [comp])
            inside = self._inside(mounts, here)
            if inside is not None:
                return self._tree_file("/".join([inside] + todo))
            try:
                st = os.lstat(root + here)
            except OSError as e:
                raise KernelError(e.errno or errno.ENOENT)
            if stat.S_ISLNK(st.st_mode):
                links += 1
                if links > MAXSYMLINKS:
                    raise KernelError(errno.ELOOP)
                try:
                    target = os.readlink(root + here)
                except OSError as e:
                    raise KernelError(e.errno or errno.ENOENT)
                if target.startswith("/"):
                    done = []
                todo[:0] = [c for c in target.split("/") if c]
                continue
            if todo and not stat.S_ISDIR(st.st_mode):
                raise KernelError(errno.ENOTDIR)
            done.append(comp)
        where = root + "/" + "/".join(done)
        inside = self._inside(mounts, "/" + "/".join(done))
        if inside is not None:
            return self._tree_file(inside)
        try:
            st = os.stat(where)
        except OSError as e:
            raise KernelError(e.errno or errno.ENOENT)
        fd = None
        if stat.S_ISREG(st.st_mode):
            try:
                fd = os.open(where, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW)
            except OSError:
                fd = None
        return HostFile(st, fd)

    @staticmethod
    def _inside(mounts, here: str):
        """The tree path of ``here`` when it is in one of our mounts."""
        best = None
        for mp, fsroot in mounts:
            mp = mp.rstrip("/")
            if here == mp or here.startswith(mp + "/") or not mp:
                if best is None or len(mp) >= len(best[0]):
                    best = (mp, fsroot.rstrip("/") + here[len(mp):])
        return None if best is None else best[1].strip("/")

    def _tree_file(self, relpath: str) -> HostFile:
        node = self.tree.root.walk(relpath) if relpath else self.tree.root
        if node is None:
            raise KernelError(errno.ENOENT)
        major, minor = (int(x) for x in self.dev.split(":"))
        return HostFile(_TreeStat(node, os.makedev(major, minor)), None,
                        readable=False if not isinstance(node, DirNode) else True)
