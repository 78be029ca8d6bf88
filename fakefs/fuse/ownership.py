"""Who owns the mounted tree, and who counts as root inside it.

The simulated kernel knows uids only as numbers on its nodes (0 by default)
and on open files (the opener).  The mount maps them to host ids the way a
user namespace would: the simulated machine's root (uid/gid 0) is the user
who mounted it.  Mounted by root, the map is the identity; mounted by a
user, that user owns the tree and can do there everything root can (and
host root keeps its privileges).

The tracefs part follows fs/tracefs/inode.c (6.12):

* ``uid=``, ``gid=`` and ``mode=`` apply to the tracefs root inode only
  (``tracefs_apply_options``); ``mode`` defaults to ``0700``
  (``TRACEFS_DEFAULT_MODE``), ``uid``/``gid`` to the machine's root;
* every other tracefs inode takes its owner from that root when the
  ownership is queried (``set_tracefs_inode_owner``), unless it was chowned
  itself (``TRACEFS_UID_PERM_SET``); nodes inside an instance take it from
  the instance's directory if that one was chowned;
* chown of the root therefore moves every node that was never chowned.
"""

from __future__ import annotations

import os

OVERFLOW_ID = 65534
TRACEFS_OPTIONS = ("uid", "gid", "mode")


class OwnershipError(ValueError):
    pass


def parse_tracefs_options(opts: list[str]) -> tuple[list[str], dict[str, int]]:
    """Split ``uid=``/``gid=``/``mode=`` (tracefs mount options) from FUSE options."""
    rest, found = [], {}
    for o in opts:
        key, sep, val = o.partition("=")
        if key not in TRACEFS_OPTIONS:
            rest.append(o)
            continue
        if not sep or not val:
            raise OwnershipError(f"option {key}= needs a value")
        try:
            found[key] = int(val, 8) & 0o7777 if key == "mode" else int(val, 10)
        except ValueError:
            raise OwnershipError(f"bad value for {key}=: {val!r}") from None
        if key != "mode" and not 0 <= found[key] < 2**32 - 1:
            raise OwnershipError(f"bad value for {key}=: {val!r}")
    return rest, found


class Ownership:
    """Host ids of the tree's nodes; simulated ids of the callers."""

    def __init__(self, owner_uid: int, owner_gid: int, tracefs_root=None,
                 tracefs_opts: dict[str, int] | None = None):
        self.owner_uid = owner_uid
        self.owner_gid = owner_gid
        self.tracefs_root = tracefs_root
        # inode numbers whose uid / gid were set by chown (TRACEFS_*_PERM_SET)
        self.uid_set: set[int] = set()
        self.gid_set: set[int] = set()
        self.tracefs_uid = owner_uid
        self.tracefs_gid = owner_gid
        opts = tracefs_opts or {}
        if tracefs_root is not None:
            if "uid" in opts:
                self.tracefs_uid = opts["uid"]
            if "gid" in opts:
                self.tracefs_gid = opts["gid"]
            if "mode" in opts:
                tracefs_root.mode = (tracefs_root.mode & ~0o7777) | opts["mode"]

    # --- id maps (simulated <-> host) ---------------------------------------
    def host_uid(self, sim_uid: int) -> int:
        return self.owner_uid if sim_uid == 0 else sim_uid

    def host_gid(self, sim_gid: int) -> int:
        return self.owner_gid if sim_gid == 0 else sim_gid

    def sim_uid(self, host_uid: int) -> int:
        """The caller as the simulated kernel sees it: the owner and host
        root are its root (capable of everything), others keep their uid."""
        if host_uid in (0, self.owner_uid):
            return 0
        return host_uid

    def sim_gid(self, host_gid: int) -> int:
        if host_gid == self.owner_gid:
            return 0
        return host_gid

    # --- tracefs inheritance ------------------------------------------------
    def _tracefs_anchor(self, node):
        """(instance dir or None) if ``node`` is in the tracefs, else False."""
        root = self.tracefs_root
        if root is None:
            return False
        path = []
        n = node
        while n is not None and n is not root:
            path.append(n)
            n = n.parent
        if n is None:
            return False
        # root/instances/<name>/... : path[-1] is "instances", path[-2] the instance
        if len(path) >= 2 and path[-1].name == "instances":
            return path[-2]
        return None

    def uid_of(self, node) -> int:
        if node.ino in self.uid_set:
            return self.host_uid(node.uid)
        inst = self._tracefs_anchor(node)
        if inst is False:
            return self.host_uid(node.uid)
        if inst is not None and inst.ino in self.uid_set:
            return self.host_uid(inst.uid)
        root = self.tracefs_root
        if root.ino in self.uid_set:
            return self.host_uid(root.uid)
        return self.tracefs_uid

    def gid_of(self, node) -> int:
        if node.ino in self.gid_set:
            return self.host_gid(node.gid)
        inst = self._tracefs_anchor(node)
        if inst is False:
            return self.host_gid(node.gid)
        if inst is not None and inst.ino in self.gid_set:
            return self.host_gid(inst.gid)
        root = self.tracefs_root
        if root.ino in self.gid_set:
            return self.host_gid(root.gid)
        return self.tracefs_gid

    def is_anchor(self, node) -> bool:
        """Do other nodes take their owner from this one (the tracefs root,
        an instance directory)?"""
        if self.tracefs_root is None:
            return False
        return node is self.tracefs_root or (
            node.parent is not None and node.parent.name == "instances"
            and node.parent.parent is self.tracefs_root)

    def chown(self, node, uid: int | None, gid: int | None) -> None:
        if uid is not None:
            node.uid = 0 if uid == self.owner_uid else uid
            self.uid_set.add(node.ino)
        if gid is not None:
            node.gid = 0 if gid == self.owner_gid else gid
            self.gid_set.add(node.ino)

    def forget(self, ino: int) -> None:
        self.uid_set.discard(ino)
        self.gid_set.discard(ino)


def default_owner() -> tuple[int, int]:
    """The mounting user (root when mounted by root)."""
    return os.getuid(), os.getgid()
