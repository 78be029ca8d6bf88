"""The pyfuse3 adapter's request handling, called directly under trio (no mount)."""

import errno
import os
import time

import pyfuse3
import pytest

from fakefs import sim
from fakefs.fuse import notify
from fakefs.fuse.adapter import FakeFS
from fakefs.fuse.pacing import REQUEST_WAIT_S
from fakefs.kernel.fs.pseudo import FileOperations, KernelError, PseudoTree, WouldBlock


class Ctx:
    pid = os.getpid()
    uid = 0
    gid = 0
    umask = 0o022


class OtherCtx(Ctx):
    """Another command's thread."""
    pid = os.getpid() + 1


class NoCtx(Ctx):
    """A request whose thread is not known (``FakeFS.caller_tid``: 0)."""
    pid = 0


class FakeClock:
    """The fake kernel's clock: the instant its ``now_ns()`` says."""

    def __init__(self, kernel):
        self.kernel = kernel

    def now_ns(self):
        return self.kernel.now_ns()


class FakeKernel:
    def __init__(self):
        self.tree = PseudoTree()
        self.steps = 0
        self.clock = FakeClock(self)
        self.now = 0                 # (given by the adapter)
        self.kprobes = None          # no probes on the VFS calls
        self.tracing = None          # no ring buffers (the heap keeper)
        self.sim_time = 0
        self.gap = None              # never in a gap
        self.timekeeper = self       # (it moves itself: a fake)
        self.driver = None           # no machine: no real process runs in it

    def now_ns(self):
        return 0

    def pay_debt(self):             # (the timekeeper's: nothing owed)
        return False

    def gap_threshold(self):
        return 1 << 62               # nothing records

    def next_boundary(self):
        return None

    def catch_up(self, max_steps=8, until=None, step_ns=None):
        self.steps += 1
        return False


class Buggy(FileOperations):
    def show(self, f):
        raise RuntimeError("bug in a show handler")


class Busy(FileOperations):
    def write(self, f, data):
        raise KernelError(errno.EBUSY)


class Empty(FileOperations):
    nonseekable = True

    def read(self, f, off, size):
        raise WouldBlock()


@pytest.fixture
def fs():
    k = FakeKernel()
    t = k.tree
    t.create_file("buggy", 0o440, t.root, None, Buggy())
    t.create_file("busy", 0o640, t.root, None, Busy())
    t.create_file("pipe", 0o440, t.root, None, Empty())
    t.create_dir("dir", t.root)
    return FakeFS(k)


async def lookup(fs, name):
    return await fs.lookup(pyfuse3.ROOT_INODE, name.encode(), Ctx())


async def test_lookup_and_attrs(fs):
    a = await lookup(fs, "busy")
    assert a.st_size == 0 and a.st_mode & 0o777 == 0o640
    # the tree's entries are trusted as long as a tracefs's dentries live:
    # the adapter tells the kernel when they change (test_mount_semantics)
    assert a.entry_timeout == notify.ENTRY_TIMEOUT >= 600
    assert a.attr_timeout == notify.ATTR_TIMEOUT >= 600
    with pytest.raises(pyfuse3.FUSEError) as e:
        await lookup(fs, "missing")
    assert e.value.errno == errno.ENOENT


async def test_a_name_longer_than_name_max_is_enametoolong_where_the_kernel_says_so(fs):
    """The root (ext4 on a Debian system) refuses a 256-byte name at lookup,
    procfs only does not find it (namei.py)."""
    fs.tree.create_dir("proc", fs.tree.root)
    proc = (await lookup(fs, "proc")).st_ino
    for parent, name, err in ((pyfuse3.ROOT_INODE, "x" * 256, errno.ENAMETOOLONG),
                              (pyfuse3.ROOT_INODE, "x" * 255, errno.ENOENT),
                              (proc, "x" * 1500, errno.ENOENT)):
        with pytest.raises(pyfuse3.FUSEError) as e:
            await fs.lookup(parent, name.encode(), Ctx())
        assert e.value.errno == err, (parent, len(name))


async def test_instance_mkdir_and_rmdir_of_a_name_longer_than_name_max_are_enametoolong():
    """The VFS looks the name up before a mkdir or rmdir: tracefs's
    simple_lookup() refuses more than NAME_MAX bytes, so no instance is
    made or looked for; 255 bytes are fine."""
    from fakefs.sim.clock import ManualClock
    k = sim.boot(seed=3, nr_cpus=2, clock=ManualClock(), host_kallsyms=False)
    fs = FakeFS(k)
    ino = pyfuse3.ROOT_INODE
    for part in ("sys", "kernel", "tracing", "instances"):
        ino = (await fs.lookup(ino, part.encode(), Ctx())).st_ino
    for name in (b"b" * 256, b"b" * 1500, "\u00e9".encode() * 128):
        for op in (fs.mkdir(ino, name, 0o755, Ctx()), fs.rmdir(ino, name, Ctx())):
            with pytest.raises(pyfuse3.FUSEError) as e:
                await op
            assert e.value.errno == errno.ENAMETOOLONG, len(name)
    assert not k.tracing.instances
    await fs.mkdir(ino, b"b" * 255, 0o755, Ctx())
    assert list(k.tracing.instances) == ["b" * 255]
    await fs.rmdir(ino, b"b" * 255, Ctx())
    assert not k.tracing.instances


async def test_direct_io_and_unexpected_exception_is_eio(fs):
    ino = (await lookup(fs, "buggy")).st_ino
    fi = await fs.open(ino, os.O_RDONLY, Ctx())
    assert fi.direct_io and not fi.keep_cache
    with pytest.raises(pyfuse3.FUSEError) as e:
        await fs.read(fi.fh, 0, 4096)
    assert e.value.errno == errno.EIO
    # the filesystem keeps working afterwards
    assert (await lookup(fs, "busy")).st_ino


async def test_kernel_errno_passes_through(fs):
    ino = (await lookup(fs, "busy")).st_ino
    fi = await fs.open(ino, os.O_WRONLY | os.O_TRUNC, Ctx())
    with pytest.raises(pyfuse3.FUSEError) as e:
        await fs.write(fi.fh, 0, b"0\n")
    assert e.value.errno == errno.EBUSY
    await fs.release(fi.fh)


async def test_nonblocking_read_gets_eagain(fs):
    ino = (await lookup(fs, "pipe")).st_ino
    fi = await fs.open(ino, os.O_RDONLY | os.O_NONBLOCK, Ctx())
    assert fi.nonseekable
    with pytest.raises(pyfuse3.FUSEError) as e:
        await fs.read(fi.fh, 0, 4096)
    assert e.value.errno == errno.EAGAIN


async def test_a_read_pays_the_work_it_would_settle_in_slices_first(fs, monkeypatch):
    """What ``FileOperations.owed(f, off)`` says a read at ``off`` would
    settle at once is paid a slice at a time before it (nothing where it
    says None), and again before a blocked read's next try."""
    from fakefs.kernel.owed import Settle

    log = []

    class Owing(FileOperations):
        nonseekable = True

        def __init__(self):
            self.settle = Settle()
            self.left = 0
            self.blocks = 0             # reads that block before one answers
            self.settle.slices.append(self.a_slice)

        def a_slice(self):
            if self.left:
                self.left -= 1
                log.append("slice")
            return self.left > 0

        def owed(self, f, off):
            return self.settle if off == 0 else None

        def read(self, f, off, size):
            log.append(("read", off, self.left))
            if self.blocks:
                self.blocks -= 1
                self.left = 2           # (owed again by the time it is woken)
                raise WouldBlock()
            return b"x"

    async def woken(fh, pid, waitq):
        pass

    monkeypatch.setattr(type(fs.waiters), "wait", lambda self, fh, pid, waitq: woken(fh, pid, waitq))
    ops = Owing()
    fs.tree.create_file("owing", 0o444, fs.tree.root, None, ops)
    fi = await fs.open((await lookup(fs, "owing")).st_ino, os.O_RDONLY, Ctx())
    for off in (0, 1):
        log.clear()
        ops.left = 3
        await fs.read(fi.fh, off, 10)
        assert log == ([("read", 1, 3)] if off else ["slice"] * 3 + [("read", 0, 0)]), off
    log.clear()
    ops.left, ops.blocks = 3, 1
    await fs.read(fi.fh, 0, 10)
    assert log == ["slice"] * 3 + [("read", 0, 0)] + ["slice"] * 2 + [("read", 0, 0)]


async def test_files_cannot_be_created_or_removed(fs):
    for call, err in ((fs.create(pyfuse3.ROOT_INODE, b"x", 0o644, os.O_WRONLY, Ctx()), errno.EACCES),
                      (fs.unlink(pyfuse3.ROOT_INODE, b"busy", Ctx()), errno.EPERM),
                      (fs.mkdir(pyfuse3.ROOT_INODE, b"new", 0o755, Ctx()), errno.EPERM)):
        with pytest.raises(pyfuse3.FUSEError) as e:
            await call
        assert e.value.errno == err


async def test_open_catches_the_kernel_up(fs):
    ino = (await lookup(fs, "busy")).st_ino
    before = fs.kernel.steps
    fi = await fs.open(ino, os.O_RDONLY, Ctx())
    assert fs.kernel.steps > before
    await fs.release(fi.fh)


class Setting(FileOperations):
    observes = False

    def show(self, f):
        return "1\n"

    def write(self, f, data):
        return len(data)


class SlowKernel(FakeKernel):
    """A catch-up of 40 steps of 10 ms each, while something records."""

    def __init__(self):
        super().__init__()
        self.left = 40

    def gap_threshold(self):
        return 300_000_000

    def catch_up(self, max_steps=8, until=None, step_ns=None):
        for _ in range(max_steps):
            if not self.left:
                return False
            time.sleep(0.01)
            self.left -= 1
            self.steps += 1
        return self.left > 0

    def run_until_now(self):
        while self.catch_up():
            pass


async def test_settings_are_read_without_waiting_for_a_catch_up():
    import trio

    k = SlowKernel()
    t = k.tree
    t.create_file("setting", 0o640, t.root, None, Setting())
    t.create_file("busy", 0o640, t.root, None, Busy())
    fs = FakeFS(k)
    setting = (await lookup(fs, "setting")).st_ino
    busy = (await lookup(fs, "busy")).st_ino
    answered = {}

    async def reader(name, ino):
        t0 = time.monotonic()
        fi = await fs.open(ino, os.O_RDONLY, Ctx())
        await fs.read(fi.fh, 0, 4096)
        await fs.release(fi.fh)
        answered[name] = (time.monotonic() - t0, k.left)

    async with trio.open_nursery() as n:
        n.start_soon(reader, "live", busy)
        await trio.sleep(0.05)
        n.start_soon(reader, "setting", setting)
    # it waited on the catch-up, at most REQUEST_WAIT_S (then served where
    # the machine got: Pacer.served_at)
    assert REQUEST_WAIT_S <= answered["live"][0] < 0.2, answered
    assert answered["setting"][1] > 0                # answered while it was under way
    assert answered["setting"][0] < 0.1
    # writing a setting catches up first (what ran so far ran under the old
    # value); another command (its burst has not waited yet: pacing.Bursts)
    k.left = 2
    fi = await fs.open(setting, os.O_WRONLY, OtherCtx())
    assert k.left == 0
    await fs.release(fi.fh)


async def test_a_catch_up_ends_at_the_instant_of_the_request():
    """A machine simulated slower than real time: each step takes two
    nanoseconds of the clock to simulate one.  The request is answered once
    the kernel reached the instant it came, not chased for ever."""
    import trio

    class SlowerThanRealTime(FakeKernel):
        def __init__(self):
            super().__init__()
            self.t = 100
            self.sim = 0

        def now_ns(self):
            return self.t

        def catch_up(self, max_steps=8, until=None, step_ns=None):
            target = self.t if until is None else until
            for _ in range(max_steps):
                if self.sim >= target:
                    return False
                self.sim += 1
                self.t += 2
            return self.sim < target

    k = SlowerThanRealTime()
    k.tree.create_file("busy", 0o640, k.tree.root, None, Busy())
    fs = FakeFS(k)
    ino = (await lookup(fs, "busy")).st_ino
    with trio.fail_after(5):
        fi = await fs.open(ino, os.O_RDONLY, Ctx())
    assert k.sim == 100
    await fs.release(fi.fh)


class LateKernel(FakeKernel):
    """A machine a second behind the host while something records (a gap
    would be 300 ms: the runner keeps it up), each step 2 ms of wall time
    for a millisecond of its time."""

    def __init__(self):
        super().__init__()
        self.sim_time = 1_000_000_000
        self.threshold = 300_000_000

    def now_ns(self):
        return 2_000_000_000

    def gap_threshold(self):
        return self.threshold

    def catch_up(self, max_steps=8, until=None, step_ns=None):
        for _ in range(max_steps):
            if self.sim_time >= until:
                return False
            time.sleep(0.002)
            self.steps += 1
            self.sim_time += 1_000_000
        return self.sim_time < until


async def test_a_request_to_a_machine_running_late_is_served_at_once_where_it_got():
    from fakefs.fuse.pacing import LATE_NS
    k = LateKernel()
    k.tree.create_file("busy", 0o640, k.tree.root, None, Busy())
    fs = FakeFS(k)
    ino = (await lookup(fs, "busy")).st_ino
    steps = k.steps
    t0 = time.monotonic()
    assert await fs.observe() == 1_000_000_000             # where it got: no step
    assert k.steps == steps
    assert time.monotonic() - t0 < REQUEST_WAIT_S
    # a machine merely a tick behind is waited on, REQUEST_WAIT_S at most
    k.sim_time = k.now_ns() - LATE_NS
    t0 = time.monotonic()
    assert await fs.observe() < k.now_ns()
    assert REQUEST_WAIT_S <= time.monotonic() - t0 < 0.1
    assert k.steps >= steps + 1 + 3
    # once nothing records, a machine that fell behind while something did
    # is still served where it got (the runner catches it up) ...
    k.sim_time = 1_000_000_000
    await fs.observe()
    assert fs.pacer.behind
    k.threshold = 1 << 62
    steps = k.steps
    assert await fs.observe() == 1_000_000_000
    assert k.steps == steps
    # ... but a stretch nobody saw behind a machine nobody keeps up is the
    # request's to catch up, however long that takes
    fs.pacer.behind = False
    k.sim_time = k.now_ns() - 2 * LATE_NS
    assert await fs.observe() == k.now_ns()


async def test_a_requests_catch_ups_wait_request_wait_s_in_all():
    """A request's wait counts from when it came (``REQUEST_CAME``): a
    call's exit after its entry waited its share is served at once, where
    the machine got."""
    from fakefs.fuse.pacing import LATE_NS, REQUEST_CAME
    k = LateKernel()
    k.sim_time = k.now_ns() - LATE_NS            # not late: waited on
    fs = FakeFS(k)
    came = REQUEST_CAME.set(time.monotonic() - REQUEST_WAIT_S)
    try:
        steps, was = k.steps, k.sim_time
        assert await fs.observe() == was
        assert k.steps == steps
    finally:
        REQUEST_CAME.reset(came)


async def test_a_commands_requests_wait_request_wait_s_in_all():
    """``echo 0 > tracing_on`` is a burst of requests (lookup, open, write,
    release): the first waits on a lagging machine, those right after it
    from the same thread are served where it got; another thread's command,
    or the same thread's after a pause, waits again (``pacing.Bursts``)."""
    from fakefs.fuse.pacing import BURST_GAP_S
    timed = await _lagging_busy()
    waited, steps = await timed(Ctx())
    assert REQUEST_WAIT_S <= waited and steps > 0
    waited, steps = await timed(Ctx())           # the same command's: at once
    assert waited < REQUEST_WAIT_S / 2 and steps == 0, (waited, steps)
    waited, steps = await timed(OtherCtx())      # another command's: waits
    assert REQUEST_WAIT_S <= waited and steps > 0
    time.sleep(BURST_GAP_S * 1.5)
    waited, steps = await timed(Ctx())           # the first's next command
    assert REQUEST_WAIT_S <= waited and steps > 0


async def _lagging_busy():
    """A command on a mount of a machine lagging the host, not late (its
    requests wait on it): (seconds it took, the machine's steps
    meanwhile) of an open and release of its file by a thread (``ctx``),
    with a FLUSH between them (its close) if ``closes``."""
    from fakefs.fuse.pacing import LATE_NS
    k = LateKernel()
    k.tree.create_file("busy", 0o640, k.tree.root, None, Busy())
    fs = FakeFS(k)
    # looked up by no known thread: the setup's request is no part of the
    # first command's burst (a slow lookup took from its wait: 16.8 ms in CI)
    ino = (await fs.lookup(pyfuse3.ROOT_INODE, b"busy", NoCtx())).st_ino
    k.sim_time = k.now_ns() - LATE_NS

    async def timed(ctx, closes=False):
        t0, steps = time.monotonic(), k.steps
        fi = await fs.open(ino, os.O_RDONLY, ctx)
        if closes:
            await fs.flush(fi.fh)
        await fs.release(fi.fh)
        return time.monotonic() - t0, k.steps - steps

    return timed


class PullingHost:
    """The host watch as a catch-up uses it: nothing new to hand over, each
    pull-in noted (``HostWatch.pull_in``)."""

    def __init__(self):
        self.pulls = []

    def caller(self, pid):
        pass

    def backlogged(self):
        return False

    def drain(self):
        return None

    def pull_in(self, t):
        self.pulls.append(t)
        return t + 5


async def test_a_request_served_where_a_lagging_machine_got_pulls_in_its_callers_events():
    """Served at the instant a lagging machine reached, a request still
    comes after what its caller did before it (a fork the host dated
    later): those events are pulled in to that instant and done before it
    is served.  The runner's catch-ups (not requests) leave them where the
    host dated them."""
    from fakefs.fuse.pacing import LATE_NS, REQUEST_CAME

    class Settling(LateKernel):
        def __init__(self):
            super().__init__()
            self.advanced = []

        def advance_to(self, t):
            self.advanced.append(t)
            self.sim_time = t

    k = Settling()
    k.sim_time = k.now_ns() - LATE_NS            # not late: waited on, then served
    host = PullingHost()
    fs = FakeFS(k, host=host)
    came = REQUEST_CAME.set(time.monotonic() - REQUEST_WAIT_S)
    try:
        was = k.sim_time
        assert await fs.observe() == was
    finally:
        REQUEST_CAME.reset(came)
    assert host.pulls == [was] and k.advanced == [was + 5]
    await fs.observe(wait_s=0.0)                  # the runner's
    assert host.pulls == [was]
    k.sim_time = late = k.now_ns() - 3 * LATE_NS  # running late: served at once, pulled in
    assert await fs.observe() == late
    assert host.pulls == [was, late] and k.advanced[-1] == late + 5


async def test_a_script_waits_again_at_each_command():
    """A shell's builtins (``echo 1 > enable``, ``echo 0 > enable``) come
    back to back from one thread: a command's FLUSH (its close) ends its
    burst, so the next command waits on the lagging machine again."""
    timed = await _lagging_busy()
    waited, steps = await timed(Ctx())
    assert REQUEST_WAIT_S <= waited and steps > 0
    waited, steps = await timed(Ctx(), closes=True)     # the same burst: at once
    assert waited < REQUEST_WAIT_S / 2 and steps == 0, (waited, steps)
    waited, steps = await timed(Ctx())           # closed: a new command waits
    assert REQUEST_WAIT_S <= waited and steps > 0


def test_bursts_are_per_thread_and_forgotten():
    from fakefs.fuse import pacing
    b = pacing.Bursts()
    assert b.begins(7, 10.0) == 10.0
    b.ends(7, 10.0, 10.025)
    assert b.begins(7, 10.030) == pytest.approx(10.005)      # spent 25 ms before it
    assert b.begins(8, 10.031) == 10.031                     # another thread
    assert b.begins(0, 10.031) == 10.031                     # not known: no burst
    b.ends(0, 10.031, 10.5)
    b.ends(7, 10.030, 10.040)
    b.ends(8, 10.031, 10.040)
    assert b.begins(7, 10.040 + pacing.BURST_GAP_S * 2) == 10.040 + pacing.BURST_GAP_S * 2
    for tid in range(100, 100 + pacing.BURSTS_KEPT):
        b.begins(tid, 11.0)
        b.ends(tid, 11.0, 11.0)
    assert len(b.by_tid) <= pacing.BURSTS_KEPT
    b.begins(1, 12.0)                            # the ended ones make room
    assert len(b.by_tid) < pacing.BURSTS_KEPT
    b.ends(1, 12.0, 12.001, closes=True)         # a FLUSH: the command is done
    assert b.begins(1, 12.002) == 12.002


async def test_a_write_that_moves_the_time_returns_once_the_kernel_got_there():
    """The virtual clock's control file (``moves_time``): the write moves
    the clock, and returns once the kernel simulated up to the new instant,
    so the request after it has nothing left to do (it did the work)."""
    from fakefs import vclock

    class Manual(FakeKernel):
        def __init__(self):
            super().__init__()
            self.clock = vclock.virtual_clock()

        def now_ns(self):
            return self.clock.now_ns()

        def catch_up(self, max_steps=8, until=None, step_ns=None):
            target = self.now_ns() if until is None else until
            for _ in range(max_steps):
                if self.sim_time >= target:
                    return False
                self.sim_time = min(target, self.sim_time + 1_000_000)
                self.steps += 1
            return self.sim_time < target

    k = Manual()
    vclock.install(k.tree, k.clock)
    k.tree.create_file("busy", 0o640, k.tree.root, None, Busy())
    assert vclock.ClockFileOps.moves_time and not FileOperations.moves_time
    fs = FakeFS(k)
    d = (await lookup(fs, vclock.CONTROL_DIR)).st_ino
    ino = (await fs.lookup(d, b"clock", Ctx())).st_ino
    fi = await fs.open(ino, os.O_WRONLY, Ctx())
    await fs.write(fi.fh, 0, b"+250ms\n")
    assert k.clock.now_ns() == 250_000_000 and k.sim_time == 250_000_000
    await fs.release(fi.fh)
    steps = k.steps
    fi = await fs.open((await lookup(fs, "busy")).st_ino, os.O_RDONLY, Ctx())
    assert k.steps == steps                   # nothing left for the next request
    await fs.release(fi.fh)


async def test_a_request_does_not_wait_for_real_processes_after_it():
    """While a request's catch-up goes on, others take the followed real
    processes' later events: when it is done it settles only what came
    before it (a catch-up through 72 s of the machine, in full and without
    letting anybody in, held a stress run's daemon for minutes)."""
    from fakefs.sim.host import SETTLE_NS

    class Racing(FakeKernel):
        def __init__(self):
            super().__init__()
            self.sim_time = 100
            self.advanced = []

        def now_ns(self):
            return 100

        def catch_up(self, max_steps=8, until=None, step_ns=None):
            fs.host_settle = 72_000_000_000     # taken meanwhile by a later request
            return False

        def advance_to(self, t):
            self.advanced.append(t)
            self.sim_time = t

    k = Racing()
    fs = FakeFS(k)
    assert await fs.observe() == 100
    assert k.advanced == [100 + SETTLE_NS]
    assert fs.host_settle == 72_000_000_000     # for the request that took them


async def test_the_kernel_serves_a_request_at_the_instant_it_came():
    """The clock goes on while the request's catch-up runs; the kernel
    serves it at the instant it came (``kernel.now``), not the clock's."""
    seen = []

    class Clocked(FileOperations):
        def open(self, f):
            seen.append((fs.kernel.now, fs.kernel.clock.now_ns()))

    class Kernel(FakeKernel):
        t = 1234

        def now_ns(self):
            return self.t

        def catch_up(self, max_steps=8, until=None, step_ns=None):
            self.t += 1000                  # (the catch-up took a while)
            return False

    k = Kernel()
    k.tree.create_file("f", 0o440, k.tree.root, None, Clocked())
    fs = FakeFS(k)
    fi = await fs.open((await lookup(fs, "f")).st_ino, os.O_RDONLY, Ctx())
    await fs.release(fi.fh)
    assert seen == [(1234, 2234)]


async def test_a_probed_vfs_call_comes_after_the_catch_up():
    """A kprobe on vfs_read makes a read of any file a hit: the kernel is
    caught up with the request first, so the hit is the newest entry of its
    CPU (not stamped ahead of what is simulated after it)."""
    from fakefs import sim
    from fakefs.sim.files import read_file, write_file
    from fakefs.sim.clock import ManualClock
    k = sim.boot(seed=1, nr_cpus=1, clock=ManualClock(), host_kallsyms=False)
    t = "sys/kernel/tracing/"
    write_file(k, t + "kprobe_events", b"p:myread vfs_read\n")
    write_file(k, t + "events/kprobes/myread/enable", b"1\n")
    fs = FakeFS(k)
    k.clock.advance(50_000_000)
    ino = k.tree.root.walk(t + "README").ino
    fi = await fs.open(ino, os.O_RDONLY, Ctx())
    await fs.read(fi.fh, 0, 4096)
    await fs.release(fi.fh)
    stamps = [float(ln.split(": ", 1)[0].split()[-1])
              for ln in read_file(k, t + "trace").decode().splitlines()
              if not ln.startswith("#")]
    assert any("myread" in ln for ln in read_file(k, t + "trace").decode().splitlines())
    assert stamps == sorted(stamps)



async def test_a_probe_on_do_sys_openat2_reads_the_caller_s_arguments(tmp_path):
    """An open through the mount is a hit of do_sys_openat2() with what the
    caller passed its open system call: dfd AT_FDCWD (-100) for a relative
    name, the name from its memory (a child blocked in an openat() of a
    fifo stands for a caller blocked in the request)."""
    from fakefs import sim
    from fakefs.sim.files import read_file, write_file
    from fakefs.sim.clock import ManualClock
    k = sim.boot(seed=1, nr_cpus=1, clock=ManualClock(), host_kallsyms=False)
    t = "sys/kernel/tracing/"
    write_file(k, t + "kprobe_events",
                 b"p:op do_sys_openat2 dfd=%di:s32 name=+0(%si):string flags=+0(%dx):x64\n")
    write_file(k, t + "events/kprobes/op/enable", b"1\n")
    fs = FakeFS(k)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    pid = os.fork()
    if pid == 0:                                   # blocks in openat(AT_FDCWD, "fifo", ...)
        os.chdir(tmp_path)
        os.open("fifo", os.O_RDONLY | os.O_CLOEXEC)
        os._exit(0)
    try:
        for _ in range(100):
            with open("/proc/%d/syscall" % pid) as fh:
                if fh.read().startswith("257 "):
                    break
            time.sleep(0.01)

        class Caller(Ctx):
            pass
        Caller.pid = pid
        ino = k.tree.root.walk(t + "README").ino
        fi = await fs.open(ino, os.O_RDONLY, Caller())
        await fs.release(fi.fh)
    finally:
        os.close(os.open(fifo, os.O_WRONLY))
        os.waitpid(pid, 0)
    lines = [ln for ln in read_file(k, t + "trace").decode().splitlines() if " op: " in ln]
    assert len(lines) == 1, lines
    assert lines[0].endswith('dfd=-100 name="fifo" flags=0x%x' % (os.O_RDONLY | os.O_CLOEXEC))


async def test_a_probe_on_tracefs_create_dir_sees_an_instance_mkdir():
    """mkdir of an instance through the mount runs tracefs_create_dir()
    for the instance and its directories: a probe reads the names, the
    instance's first, in the mkdir caller's task."""
    from fakefs.sim.files import read_file, write_file
    from fakefs.sim.clock import ManualClock
    k = sim.boot(seed=3, nr_cpus=2, clock=ManualClock(), host_kallsyms=False)
    t = "sys/kernel/tracing/"
    write_file(k, t + "kprobe_events", b"p:mk tracefs_create_dir name=+0(%di):string\n")
    write_file(k, t + "events/kprobes/mk/enable", b"1\n")
    fs = FakeFS(k)
    ino = pyfuse3.ROOT_INODE
    for part in ("sys", "kernel", "tracing", "instances"):
        ino = (await fs.lookup(ino, part.encode(), Ctx())).st_ino
    await fs.mkdir(ino, b"my_instance", 0o755, Ctx())
    lines = [ln for ln in read_file(k, t + "trace").decode().splitlines()
             if " mk: " in ln]
    names = [ln.split('name="')[1].rstrip('"') for ln in lines]
    assert names == ["my_instance", "options", "per_cpu", "cpu0", "cpu1"]
    assert all("(tracefs_create_dir+0x4/" in ln for ln in lines)
    await fs.rmdir(ino, b"my_instance", Ctx())


class Setting(FileOperations):
    def write(self, f, data):
        return len(data)


class Marker(Setting):
    writes_data = True


async def test_a_setting_written_restarts_the_pacers_step_size_a_marker_does_not(fs):
    """What a step costs after a setting changed, nothing measured says
    (``Pacer.restart``: grown while nothing was traced, the first step
    after ``events/enable`` took ~130 ms); a write that records data
    (trace_marker, /dev/kmsg) changes no setting."""
    from fakefs.fuse.pacing import MIN_STEP_NS
    from fakefs.kernel.trace.trace_buffer_files import TraceMarkerRawOps
    from fakefs.kernel.trace.trace_files import TraceMarkerOps
    t = fs.kernel.tree
    t.create_file("setting", 0o640, t.root, None, Setting())
    t.create_file("marker", 0o640, t.root, None, Marker())
    for name, restarts in (("marker", False), ("setting", True)):
        fs.pacer.step_ns = 20_000_000
        fi = await fs.open((await lookup(fs, name)).st_ino, os.O_WRONLY, Ctx())
        assert await fs.write(fi.fh, 0, b"1\n") == 2
        await fs.release(fi.fh)
        assert (fs.pacer.step_ns == MIN_STEP_NS) == restarts, name
    assert TraceMarkerOps.writes_data and TraceMarkerRawOps.writes_data
    assert not FileOperations.writes_data
