"""What a lookup answers for a name longer than NAME_MAX (fs/namei.c,
fs/libfs.c ``simple_lookup()``).

The VFS passes a path component of any length to the filesystem's
``lookup``; whether a name of more than NAME_MAX (255) bytes is refused
with ENAMETOOLONG or simply not found (ENOENT) is up to that filesystem:

* ``simple_lookup()`` refuses it: tracefs's directories (the top, per_cpu/,
  options/, instances/ and an instance's), debugfs, devtmpfs; so does
  ext4's lookup (``/`` and ``/boot`` of a Debian system).  A mkdir or rmdir
  looks the name up first, so ``mkdir instances/<256 bytes>`` is
  ENAMETOOLONG before tracefs sees it.
* procfs, sysfs (kernfs) and eventfs (``events/`` and below, in the top
  and in every instance) look the name up among their entries: ENOENT.

The simulated tree mirrors the layout under ``/`` (``sys/kernel/tracing``,
``proc``, ...), so the filesystem of a directory follows from its path.
"""

from __future__ import annotations

import errno

from .pseudo import KernelError

NAME_MAX = 255

# top directories of the tree and their filesystems, most specific first
MOUNTS = (("sys/kernel/tracing", "tracefs"), ("sys/kernel/debug", "debugfs"),
          ("sys", "sysfs"), ("proc", "proc"), ("dev", "devtmpfs"), ("", "ext4"))
CHECKS_NAME_MAX = frozenset(("tracefs", "debugfs", "devtmpfs", "ext4"))


def filesystem_of(path: str) -> tuple[str, list[str]]:
    """The filesystem a directory at ``path`` (from the tree's root) is
    on, and the path's components below that filesystem's root."""
    parts = [p for p in path.split("/") if p]
    for top, fs in MOUNTS:
        tparts = top.split("/") if top else []
        if parts[:len(tparts)] == tparts:
            return fs, parts[len(tparts):]
    raise AssertionError("unreachable: the root matches")


def is_eventfs(rest: list[str]) -> bool:
    """Below tracefs's root: ``events/...`` or ``instances/NAME/events/...``."""
    return rest[:1] == ["events"] or (rest[:1] == ["instances"] and rest[2:3] == ["events"])


def lookup_name_too_long(dir_path: str, name: bytes) -> bool:
    """Does a lookup of ``name`` in the directory at ``dir_path`` fail with
    ENAMETOOLONG (rather than find it or answer ENOENT)?"""
    if len(name) <= NAME_MAX:
        return False
    fs, rest = filesystem_of(dir_path)
    if fs == "tracefs" and is_eventfs(rest):
        return False
    return fs in CHECKS_NAME_MAX


def lookup_name(d, name: bytes) -> None:
    """The check of a lookup of ``name`` in directory node ``d`` before
    its entries are searched: KernelError(ENAMETOOLONG) where
    :func:`lookup_name_too_long` says so.  The VFS looks a name up before
    a mkdir or rmdir of it too: the filesystem's own operations never see
    a name it refuses here."""
    if lookup_name_too_long(d.path(), name):
        raise KernelError(errno.ENAMETOOLONG)
