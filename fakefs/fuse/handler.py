"""How the adapter handles a request (the ``@handler`` of each of
``FakeFS``'s operations): kernel errors become their errno, any other
exception is logged and becomes EIO (never a daemon crash), what the
request changed in the tree is told to the kernel before the answer
(``notify.request_scope``), and, while syscall events are on, a request
that does the work of its caller's system call is that call in the
simulated kernel (``syscall_events.py``)."""

from __future__ import annotations

import errno
import functools
import logging
import time

import pyfuse3
import trio

from ..kernel.fs.pseudo import KernelError
from . import notify, syscall_events
from .pacing import REQUEST_CAME

log = logging.getLogger("fakefs.fuse")


def handler(fn):
    """Map kernel errors to errno and contain every other exception; what
    the request changed in the tree is told to the kernel before it is
    answered (``notify.request_scope``).  A request that does the work of
    its caller's system call is that call in the simulated kernel while
    syscall events are on (``syscall_events.py``).  The whole of it, the
    call's entry and exit included, is one request for the heap keeper."""
    name = fn.__name__
    serve = _errno(fn)
    if name not in syscall_events.REQUESTS:
        return _in_heap(serve)

    @functools.wraps(fn)
    async def as_syscall(self, *args, **kwargs):
        calls = self.syscalls
        if not calls.watching(name):
            return await serve(self, *args, **kwargs)
        tid = self.caller_tid(name, args, kwargs)
        try:
            p = await calls.begin(name, tid)
        except Exception:
            log.exception("%s: the caller's system call", name)
            p = None
        try:
            result = await serve(self, *args, **kwargs)
        except pyfuse3.FUSEError as e:
            if p is not None:
                try:
                    await calls.failed(name, tid, p, e.errno)
                except Exception:
                    log.exception("%s: the caller's system call", name)
            raise
        if p is not None:
            try:
                await calls.done(name, tid, p, result, args[2] if name == "read"
                                 else len(args[2]) if name == "write" else 0)
            except Exception:
                log.exception("%s: the caller's system call", name)
        return result

    return _in_heap(as_syscall)


def _in_heap(fn):
    """The request begins and ends for the heap keeper (``heap.py``); then
    the readers and pollers waiting on the kernel look again (what they
    wait for may have moved).  When it came is known to its catch-ups
    (``pacing.REQUEST_CAME``: what it waits on them is counted from then,
    less what its command's requests before it spent: ``pacing.Bursts``)."""
    name = fn.__name__

    @functools.wraps(fn)
    async def wrapper(self, *args, **kwargs):
        self.kernel.now = self.kernel.clock.now_ns()     # the request came now
        self.heap.request_begins()
        tid = self.caller_tid(name, args, kwargs)
        arrived = time.monotonic()
        came = REQUEST_CAME.set(self.bursts.begins(tid, arrived))
        try:
            return await fn(self, *args, **kwargs)
        finally:
            REQUEST_CAME.reset(came)
            self.bursts.ends(tid, arrived, time.monotonic(), closes=name == "flush")
            try:
                self.heap.request_ends()
                if self.waiters.readers:
                    self.waiters.poke()
                if self.poll_waiters:
                    self.wake_pollers()
            except Exception:           # (outside _errno: never out to pyfuse3)
                log.exception("%s: after the request", fn.__name__)

    return wrapper


def _errno(fn):
    """Kernel errors become their errno, any other exception EIO (logged);
    what the request changed in the tree is told before it is answered."""

    @functools.wraps(fn)
    async def wrapper(self, *args, **kwargs):
        try:
            async with notify.request_scope():
                return await fn(self, *args, **kwargs)
        except (pyfuse3.FUSEError, trio.Cancelled, KeyboardInterrupt):
            raise
        except KernelError as e:
            raise pyfuse3.FUSEError(e.errno)
        except Exception:
            log.exception("%s failed", fn.__name__)
            raise pyfuse3.FUSEError(errno.EIO)

    return wrapper
