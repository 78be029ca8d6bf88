"""What the kernel caches of the mount, and how it is told that it changed
(FUSE's notifications: ``FUSE_NOTIFY_INVAL_ENTRY``, ``FUSE_NOTIFY_INVAL_INODE``).

The kernel may trust an entry and its attributes for ``ENTRY_TIMEOUT`` /
``ATTR_TIMEOUT`` without asking: a tracefs keeps its dentries as long, and
ftracetest's reset before each test reads ~7,400 files under ``events/``
(with 1 s the kernel looked each path up again every time).  What the
kernel model changes on its own is told at once:

* a removed entry (a write to ``kprobe_events`` removes event directories:
  the next ``test -d`` must not find them).  Removals made inside a request
  are told before it is answered, from a thread (the kernel may hold the
  notification until a request on the same directory is answered), waiting
  at most ``INVAL_WAIT``;
* the attributes of a directory that gained or lost an entry (``nlink``,
  ``mtime``), once per request;
* the attributes of the nodes that inherit a new owner (``attrs_below``).

Attribute-only invalidation takes no page lock: it is safe inside a
request.  The host's links (``hostlinks.py``) answer per caller: they keep
``LINK_TIMEOUT``.  What the VFS itself changes (mkdir, rmdir) the kernel
updates on its own.
"""

from __future__ import annotations

import contextlib
import contextvars
import logging

import pyfuse3
import trio

from ..kernel.fs.pseudo import DirNode

log = logging.getLogger("fakefs.fuse")

ENTRY_TIMEOUT = 3600.0
ATTR_TIMEOUT = 3600.0
LINK_TIMEOUT = 1.0
INVAL_WAIT = 0.5

# per request (each trio task has its own): the entries it removed, the
# directories whose attributes it changed
_ENTRIES: contextvars.ContextVar = contextvars.ContextVar("pending_entries", default=None)
_ATTRS: contextvars.ContextVar = contextvars.ContextVar("pending_attrs", default=None)


def _entries_now(items) -> None:
    for parent, name, deleted in items:
        try:
            pyfuse3.invalidate_entry(parent, name, deleted=deleted)
        except OSError:
            pass                 # not in the kernel's cache
        except Exception:        # never instead of the request's reply
            log.debug("invalidate %r failed", name, exc_info=True)


def attrs_now(inodes) -> None:
    for ino in inodes:
        try:
            pyfuse3.invalidate_inode(ino, attr_only=True)
        except OSError:
            pass                 # ENOENT: the kernel does not hold it
        except Exception:        # never instead of the request's reply
            log.debug("invalidate inode %d failed", ino, exc_info=True)


@contextlib.asynccontextmanager
async def request_scope():
    """``async with`` around a request: what it changed is told before it
    is answered."""
    entries = _ENTRIES.set([])
    attrs = _ATTRS.set(set())
    try:
        yield
    finally:
        stale = _ATTRS.get()
        _ATTRS.reset(attrs)
        pending = _ENTRIES.get()
        _ENTRIES.reset(entries)
        if stale:
            attrs_now(stale)
        if pending:
            with trio.move_on_after(INVAL_WAIT):
                await trio.to_thread.run_sync(_entries_now, pending, abandon_on_cancel=True)


def tree_changed(parent, name: str, node, added: bool) -> None:
    """``name`` was added under ``parent`` or removed from it."""
    stale = _ATTRS.get()                  # the parent's nlink and mtime changed
    if stale is not None:
        stale.add(parent.ino)
    else:
        attrs_now((parent.ino,))
    if added:
        return
    # a directory gets a plain invalidation: the kernel refuses to notify
    # the deletion of one whose entries are still in use (an event's files
    # until their RELEASE is answered), and the stale entry would be seen
    # until it times out
    deleted = 0 if isinstance(node, DirNode) else node.ino
    pending = _ENTRIES.get()
    if pending is not None:
        pending.append((parent.ino, name.encode(), deleted))
        return
    try:
        pyfuse3.invalidate_entry_async(parent.ino, name.encode(), deleted=deleted,
                                       ignore_enoent=True)
    except Exception:   # never let a notification failure reach the kernel model
        log.debug("invalidate %s failed", name, exc_info=True)


def attrs_below(d: DirNode) -> None:
    """The nodes under ``d`` (which inherit their owner from it)."""
    stack = list(d.created_children())
    inodes = []
    while stack:
        n = stack.pop()
        if isinstance(n, DirNode):
            stack.extend(n.created_children())
        inodes.append(n.ino)
    attrs_now(inodes)
