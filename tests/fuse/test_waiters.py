"""Blocked reads wait without polling (fakefs/fuse/waiters.py): in-process
through the adapter, and on a real mount (daemon CPU, prompt wake-ups)."""

from __future__ import annotations

import errno
import select
import os
import signal
import subprocess
import sys
import time

import pyfuse3
import pytest
import trio

import mountlib

from fakefs.bench.requests import blocked_readers_cpu
from fakefs.fuse import waiters
from fakefs.fuse.adapter import FakeFS
from fakefs.kernel.fs.pseudo import FileOperations, PseudoTree, WouldBlock


class Ctx:
    pid = 0                      # no opener to look at for signals
    uid = 0
    gid = 0
    umask = 0o022


class Clock:
    def now_ns(self):
        return 0


class Driver:
    frozen = True


class Kernel:
    """The adapter's view of a kernel: ``seen`` says whether anything sees
    the machine (then the ticker catches up); ``steps`` counts catch-ups."""

    def __init__(self, seen: bool):
        self.tree = PseudoTree()
        self.clock = Clock()
        self.now = 0                  # (given by the adapter)
        self.kprobes = None
        self.tracing = None
        self.sim_time = 0
        self.gap = None
        self.timekeeper = self        # (it moves itself: a fake)
        self.driver = Driver()
        self.seen = seen
        self.steps = 0

    def gap_threshold(self):
        return 1 << 62               # nothing records

    def next_boundary(self):
        return None

    def machine_seen(self):
        return self.seen

    def catch_up(self, max_steps=8, until=None, step_ns=None):
        self.steps += 1
        return False


class Box:
    """What the readers wait for: ``value`` reaching ``need``."""

    def __init__(self):
        self.value = 0
        self.reads = 0


class BoxWait:
    __slots__ = ("box",)

    def __init__(self, box):
        self.box = box

    @property
    def key(self):
        return id(self.box)

    def token(self):
        return self.box.value


class BoxOps(FileOperations):
    nonseekable = True

    def __init__(self, box: Box, keyed: bool = True):
        self.box = box
        self.keyed = keyed

    def read(self, f, off, size):
        self.box.reads += 1
        if self.box.value < 2:
            raise WouldBlock(BoxWait(self.box) if self.keyed else None)
        return b"%d\n" % self.box.value


def make_fs(seen: bool, keyed: bool = True):
    k = Kernel(seen)
    box = Box()
    node = k.tree.create_file("box", 0o440, k.tree.root, None, BoxOps(box, keyed))
    return FakeFS(k), box, node.ino


async def _readers(fs, ino, n, got, nursery):
    for _ in range(n):
        fi = await fs.open(ino, os.O_RDONLY, Ctx())

        async def one(fh=fi.fh):
            got.append(await fs.read(fh, 0, 4096))
        nursery.start_soon(one)


async def test_waiting_readers_read_again_only_when_their_token_moves():
    fs, box, ino = make_fs(seen=True)
    got = []
    async with trio.open_nursery() as n:
        await _readers(fs, ino, 100, got, n)
        with trio.fail_after(10):                # (a loaded host: all of them waiting first)
            while len(fs.waiters) < 100:
                await trio.sleep(0.005)
        steps = fs.kernel.steps                  # (the opens' and reads' catch-ups)
        await trio.sleep(0.4)                    # 8 ticks
        assert box.reads == 100                  # each read once, then waited
        assert len(fs.waiters) == 100
        assert 4 <= fs.kernel.steps - steps <= 12    # one catch-up a tick, not one a reader
        box.value = 1                            # moved: all read again, still nothing
        fs.waiters.poke()
        await trio.sleep(0.02)
        assert box.reads == 200 and len(fs.waiters) == 100
        box.value = 2
        fs.waiters.poke()
    assert got == [b"2\n"] * 100 and box.reads == 300
    assert len(fs.waiters) == 0 and fs.waiters.ticker is None


async def test_what_a_catch_up_records_reaches_the_readers_without_a_request():
    """While the machine is seen the ticker catches up every TICK_S: what
    the catch-ups record (here the fifth puts the value there) wakes the
    readers with no request coming."""
    fs, box, ino = make_fs(seen=True)
    got = []
    catch_up = fs.kernel.catch_up
    at = None

    def recording(*a, **kw):
        if fs.kernel.steps == at:
            box.value = 2
        return catch_up(*a, **kw)
    fs.kernel.catch_up = recording
    with trio.fail_after(2):
        async with trio.open_nursery() as n:
            await _readers(fs, ino, 10, got, n)
            await trio.sleep(0.01)
            at = fs.kernel.steps + 5
            t = time.monotonic()
    assert got == [b"2\n"] * 10 and box.reads == 20
    assert 4 * waiters.TICK_S <= time.monotonic() - t < 10 * waiters.TICK_S


async def test_nothing_ticks_while_nothing_sees_the_machine():
    """No catch-up and no read while the machine is unseen: a request that
    changes what they wait for wakes them (its answer pokes the ticker)."""
    fs, box, ino = make_fs(seen=False)
    got = []
    async with trio.open_nursery() as n:
        await _readers(fs, ino, 20, got, n)
        await trio.sleep(0.01)
        steps = fs.kernel.steps
        await trio.sleep(0.3)
        assert fs.kernel.steps == steps and box.reads == 20
        box.value = 2
        t = time.monotonic()
        await fs.getattr(pyfuse3.ROOT_INODE)     # any request: its end pokes
    assert time.monotonic() - t < 0.05
    assert got == [b"2\n"] * 20


async def test_a_read_naming_nothing_to_wait_on_reads_again_each_tick():
    fs, box, ino = make_fs(seen=False, keyed=False)
    got = []
    async with trio.open_nursery() as n:
        await _readers(fs, ino, 3, got, n)
        await trio.sleep(0.33)
        assert 3 * 5 <= box.reads <= 3 * 9       # every TICK_S (50 ms)
        box.value = 2
    assert got == [b"2\n"] * 3


async def test_the_ticker_hands_over_when_its_reader_leaves():
    """The reader that ticks gets EINTR (its own file is flushed); the
    others keep being served by the next one."""
    fs, box, ino = make_fs(seen=True)
    got = []
    async with trio.open_nursery() as n:
        fi = await fs.open(ino, os.O_RDONLY, Ctx())
        first = []

        async def ticker_reader():
            with pytest.raises(pyfuse3.FUSEError) as e:
                await fs.read(fi.fh, 0, 4096)
            first.append(e.value.errno)
        n.start_soon(ticker_reader)
        await trio.sleep(0.01)
        await _readers(fs, ino, 5, got, n)
        await trio.sleep(0.01)
        ticker = fs.waiters.ticker
        assert ticker is not None and ticker.fh == fi.fh
        ticker.wake(errno.EINTR)
        await trio.sleep(0.1)
        assert fs.waiters.ticker is not None and fs.waiters.ticker is not ticker
        steps = fs.kernel.steps
        await trio.sleep(0.2)
        assert fs.kernel.steps > steps           # still ticking
        box.value = 2
        fs.waiters.poke()
    assert first == [errno.EINTR] and got == [b"2\n"] * 5


async def test_terminating_answers_every_waiter_enotconn():
    fs, box, ino = make_fs(seen=False)
    errs = []

    async def one(fh):
        try:
            await fs.read(fh, 0, 4096)
        except pyfuse3.FUSEError as e:
            errs.append(e.errno)
    async with trio.open_nursery() as n:
        for _ in range(3):
            fi = await fs.open(ino, os.O_RDONLY, Ctx())
            n.start_soon(one, fi.fh)
        await trio.sleep(0.05)
        fs.terminate()                           # what SIGTERM's handler calls
    assert errs == [errno.ENOTCONN] * 3


# --- through a mount ---------------------------------------------------------

def test_blocked_trace_pipe_readers_cost_almost_nothing():
    """50 readers blocked in trace_pipe, nothing traced: the daemon used
    ~15 % of a core when each woke every 50 ms (2.96 s over 5 s for 200);
    now ~0.5 %, which is the idle daemon's.  Each then ends on SIGINT
    (EINTR from the daemon, then the signal's default action)."""
    with mountlib.mounted() as mnt:
        used, alive, ended = blocked_readers_cpu(mnt, readers=50, seconds=2.0, settle=1.0)
    assert alive == 50
    assert ended == [-signal.SIGINT] * 50, ended
    assert used / 2.0 < 0.05, "daemon used %.1f %% of a core" % (used / 2.0 * 100)


READER = r"""
import os, signal, sys, time
def raise_it(signum, frame):
    raise KeyboardInterrupt
signal.signal(signal.SIGUSR1, raise_it)
fd = os.open(sys.argv[1], os.O_RDONLY)
print("open", flush=True)
try:
    data = os.read(fd, 4096)
    print("read", time.monotonic(), data.decode(errors="replace").strip(), flush=True)
except KeyboardInterrupt:
    print("eintr", time.monotonic(), flush=True)
"""


def _reader(path):
    p = subprocess.Popen([sys.executable, "-c", READER, path], stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline() == "open\n"
    return p


def test_trace_marker_wakes_a_blocked_reader_promptly_and_a_signal_interrupts():
    with mountlib.mounted() as mnt:
        tracing = os.path.join(mnt, "sys/kernel/tracing")
        path = os.path.join(tracing, "trace_pipe")
        readers = [_reader(path) for _ in range(3)]
        other = _reader(os.path.join(tracing, "per_cpu/cpu0/trace_pipe"))
        try:
            time.sleep(0.5)                       # all blocked
            assert all(p.poll() is None for p in readers + [other])
            fd = os.open(os.path.join(tracing, "trace_marker"), os.O_WRONLY)
            t = time.monotonic()
            os.write(fd, b"wake-up")
            os.close(fd)
            # one of them gets the line (they share the buffer); the others wait on
            everyone = readers + [other]
            woke = []
            deadline = time.monotonic() + 5
            while not woke and time.monotonic() < deadline:
                woke = [p for p in everyone if p.poll() is not None]
                time.sleep(0.005)
            time.sleep(0.2)
            assert [p for p in everyone if p.poll() is not None] == woke and len(woke) == 1
            out = woke[0].stdout.read().split(None, 2)
            assert out[0] == "read" and out[2].strip().endswith("wake-up")
            assert float(out[1]) - t < 0.3, "woken %.3f s after the write" % (float(out[1]) - t)
            # a signal ends a blocked read (EINTR), in a batch check's time
            rest = [p for p in everyone if p is not woke[0]]
            t = time.monotonic()
            for p in rest:
                p.send_signal(signal.SIGUSR1)
            for p in rest:
                out = p.stdout.read().split()
                assert out[0] == "eintr", out
                assert float(out[1]) - t < 1.0
        finally:
            for p in readers + [other]:
                if p.poll() is None:
                    p.kill()
                    p.wait()



class Handle:
    """A pyfuse3 poll handle: how many times it was notified."""

    def __init__(self):
        self.notified = 0

    def notify(self):
        self.notified += 1


class PollBoxOps(BoxOps):
    def poll(self, f):
        return select.POLLIN if self.box.value >= 2 else 0


async def test_a_poller_is_woken_by_the_request_that_makes_its_file_ready():
    """As the kernel wakes its pollers where the data comes, not at a
    later tick: a request's end asks the waiting pollers (no watcher runs
    here, the 100 ms one of the daemon's loop included)."""
    k = Kernel(seen=True)
    box = Box()
    ino = k.tree.create_file("box", 0o440, k.tree.root, None, PollBoxOps(box)).ino
    fs = FakeFS(k)
    fi = await fs.open(ino, os.O_RDONLY, Ctx())
    h = Handle()
    assert await fs.poll(ino, fi.fh, h, Ctx()) == 0
    assert fs.poll_waiters == {fi.fh: h}
    await fs.getattr(pyfuse3.ROOT_INODE, Ctx())
    assert h.notified == 0 and fi.fh in fs.poll_waiters      # not ready: still waits
    box.value = 2
    await fs.getattr(pyfuse3.ROOT_INODE, Ctx())
    assert h.notified == 1 and not fs.poll_waiters
