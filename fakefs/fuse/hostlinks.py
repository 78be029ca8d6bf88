"""The host's entries beside the simulated kernel's, as symbolic links:
how ``fakefs sandbox`` puts the simulated ``/proc/profile``,
``/proc/allocinfo`` ... at their real paths although the host's procfs
takes no new entries.

A directory of the tree under ``mirror`` (``proc``) shows, besides its own
entries, every entry of the matching host directory it does not have
itself, as a link to the same name under ``prefix``: where the sandbox
puts the host's procfs in the namespace of the command it runs.  The
links are resolved by the reader, in its own context, so ``/proc/self``
is the reader's, ``/proc/mounts`` its namespace's mounts, and a process
started after the mount is there.  The simulated kernel's entries win:
``proc/sys/vm/mem_profiling`` is the fake's, ``proc/sys/vm/swappiness``
a link to the host's.

``self`` and ``thread-self`` read as procfs has them, for the reader:
``PID`` and ``PID/task/TID`` (the links beside them take it on).

The daemon lists the host directory where it runs itself (``host_root``,
its own view of ``/proc``); it never looks through its own mount.
Links are kept while the host has their entry: a readdir or lookup that
finds it gone drops it, so pids that come and go do not pile up.
"""

from __future__ import annotations

import os
import stat
import time

LINK_INO_BASE = 1 << 48        # above any inode the tree hands out
LINK_MODE = stat.S_IFLNK | 0o777
SELF_LINKS = ("self", "thread-self")      # the reader's, as procfs's own


class HostLink:
    """A symbolic link to the host's ``target``; ``reader`` for ``self``
    and ``thread-self`` at the top, which read as the reader's pid."""

    __slots__ = ("name", "ino", "target", "reader", "mode", "mtime")

    def __init__(self, name: str, ino: int, target: str, reader: bool):
        self.name = name
        self.ino = ino
        self.target = target
        self.reader = reader
        self.mode = LINK_MODE
        self.mtime = time.time()


class HostLinks:
    """The links of the directories below ``mirror`` (a path of the tree,
    without a leading ``/``) to ``prefix``; the host's listing is read
    from ``host_root``."""

    def __init__(self, mirror: str, prefix: str, host_root: str):
        self.mirror = "/" + mirror.strip("/")
        self.prefix = prefix.rstrip("/")
        self.host_root = host_root.rstrip("/")
        self._next = LINK_INO_BASE
        self.by_ino: dict[int, HostLink] = {}
        self.dirs: dict[str, dict[str, HostLink]] = {}   # relative dir -> name -> link

    def _rel(self, parent) -> str | None:
        """``parent``'s path below the mirrored directory ('' for itself);
        None when it is not below it."""
        path = parent.path()
        if path == self.mirror:
            return ""
        if path.startswith(self.mirror + "/"):
            return path[len(self.mirror) + 1:]
        return None

    def node(self, ino: int) -> HostLink | None:
        return self.by_ino.get(ino)

    def _link(self, rel: str, name: str) -> HostLink:
        known = self.dirs.setdefault(rel, {})
        link = known.get(name)
        if link is None:
            path = rel + "/" + name if rel else name
            link = HostLink(name, self._next, self.prefix + "/" + path,
                            reader=not rel and name in SELF_LINKS)
            self._next += 1
            known[name] = self.by_ino[link.ino] = link
        return link

    def _drop(self, rel: str, name: str) -> None:
        link = self.dirs.get(rel, {}).pop(name, None)
        if link is not None:
            del self.by_ino[link.ino]

    def readlink(self, link: HostLink, tid: int) -> str:
        """What ``link`` reads for the thread ``tid``."""
        if link.reader:
            tgid = self._tgid(tid)
            if tgid is not None:
                return str(tgid) if link.name == "self" else "%d/task/%d" % (tgid, tid)
        return link.target

    def _tgid(self, tid: int) -> int | None:
        try:
            with open("%s/%d/status" % (self.host_root, tid), "rb") as f:
                for line in f:
                    if line.startswith(b"Tgid:"):
                        return int(line.split()[1])
        except (OSError, ValueError, IndexError):
            pass
        return None

    def lookup(self, parent, name: str) -> HostLink | None:
        """The link for ``name`` in ``parent`` (which has no such entry
        itself), or None when the host has none either."""
        rel = self._rel(parent)
        if rel is None:
            return None
        if not os.path.lexists(os.path.join(self.host_root, rel, name)):
            self._drop(rel, name)
            return None
        return self._link(rel, name)

    def entries(self, parent) -> list[HostLink]:
        """The host's entries that ``parent`` does not have, as links, in
        the host's order; the links of entries the host no longer has go
        (pids come and go)."""
        rel = self._rel(parent)
        if rel is None:
            return []
        try:
            names = os.listdir(os.path.join(self.host_root, rel))
        except OSError:
            names = []
        for name in set(self.dirs.get(rel, ())) - set(names):
            self._drop(rel, name)
        own = parent.children
        return [self._link(rel, n) for n in names if n not in own]
