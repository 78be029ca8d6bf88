"""The adapter's ``@handler`` (fuse/handler.py): errors become errno, and a
request that is its caller's system call is one request for the heap
keeper from the call's entry to its exit."""

import errno
import types

import pyfuse3
import pytest
import trio

from fakefs.fuse.handler import handler
from fakefs.fuse.pacing import Bursts
from fakefs.kernel.fs.pseudo import KernelError
from fakefs.sim.clock import ManualClock


class Log:
    def __init__(self):
        self.said = []


class Heap:
    def __init__(self, log):
        self.log = log

    def request_begins(self):
        self.log.said.append("begins")

    def request_ends(self):
        self.log.said.append("ends")


class Waiters:
    readers = 0


class Calls:
    def __init__(self, log):
        self.log = log

    def watching(self, name):
        return True

    async def begin(self, name, tid):
        self.log.said.append("entry")
        return object()

    async def done(self, name, tid, p, result, size):
        self.log.said.append("exit")

    async def failed(self, name, tid, p, err):
        self.log.said.append("exit %d" % err)


class FS:
    def __init__(self, error=None):
        self.log = Log()
        self.heap = Heap(self.log)
        self.waiters = Waiters()
        self.syscalls = Calls(self.log)
        self.error = error
        self.kernel = types.SimpleNamespace(now=0, clock=ManualClock(7_000))
        self.bursts = Bursts()

    def caller_tid(self, name, args, kwargs):
        return 4242

    @handler
    async def read(self, fh, off, size):
        self.log.said.append("served")
        if self.error is not None:
            raise self.error
        return b"x" * size

    @handler
    async def statfs(self, ctx):            # not a system call's request
        self.log.said.append("served")
        raise ValueError("a bug")


def test_the_call_s_entry_and_exit_are_inside_the_request():
    fs = FS()
    assert trio.run(fs.read, 1, 0, 3) == b"xxx"
    assert fs.log.said == ["begins", "entry", "served", "exit", "ends"]


def test_a_kernel_error_is_its_errno_and_the_call_returns_it():
    fs = FS(KernelError(errno.EINVAL))
    with pytest.raises(pyfuse3.FUSEError) as e:
        trio.run(fs.read, 1, 0, 3)
    assert e.value.errno == errno.EINVAL
    assert fs.log.said == ["begins", "entry", "served", "exit %d" % errno.EINVAL, "ends"]


def test_any_other_exception_is_eio_and_the_request_still_ends():
    fs = FS()
    with pytest.raises(pyfuse3.FUSEError) as e:
        trio.run(fs.statfs, None)
    assert e.value.errno == errno.EIO
    assert fs.log.said == ["begins", "served", "ends"]


def test_the_kernel_is_at_the_instant_the_request_came():
    fs = FS()
    fs.kernel.clock.advance(5_000)
    trio.run(fs.read, 3, 0, 4)
    assert fs.kernel.now == 12_000
