"""A real process's system calls that reach the mount as the simulated
kernel's syscall events (fakefs/fuse/syscall_events.py), and what the host tells
of its callers (fuse/procfd.py: the call it is in, its memory, its next
descriptor).  A forked child blocked in a system call stands for a caller
blocked in its request."""

import contextlib
import ctypes
import errno
import os
import subprocess
import time

import pyfuse3
import pytest

from fakefs.fuse.adapter import FakeFS
from fakefs.fuse.procfd import HostMemory, caller_syscall, lowest_free_fd
from fakefs.sim.files import read_file, write_file

from mountlib import requires_fuse

T = "sys/kernel/tracing/"


def wait_in_call(pid: int, nr: int, first: str = "") -> None:
    """Until ``pid`` is in system call ``nr`` (its first argument ``first``)."""
    want = "%d %s" % (nr, first + " " if first else "")
    for _ in range(500):
        with open("/proc/%d/syscall" % pid) as fh:
            if fh.read().startswith(want):
                return
        time.sleep(0.01)
    raise AssertionError("pid %d never entered system call %d" % (pid, nr))


def test_caller_syscall_is_the_call_a_thread_is_blocked_in():
    p = subprocess.Popen(["python3", "-c", "import os; os.read(0, 10)"], stdin=subprocess.PIPE)
    try:
        wait_in_call(p.pid, 0, "0x0")
        sc = caller_syscall(p.pid)
        assert sc.nr == 0 and sc.args[0] == 0 and sc.args[2] == 10
    finally:
        p.communicate(b"x")
    assert caller_syscall(p.pid) is None            # gone


def test_host_memory_reads_a_process_s_bytes_and_strings():
    buf = ctypes.create_string_buffer(b"/sys/kernel/tracing\0tail")
    mem = HostMemory(os.getpid())
    addr = ctypes.addressof(buf)
    assert mem.read_string(addr) == b"/sys/kernel/tracing"
    assert mem.read(addr, 4) == int.from_bytes(b"/sys", "little")
    assert mem.read_string(addr + 5, limit=4) == b"ker"          # cut at limit - 1
    assert mem.read(0, 8) is None and mem.read_string(8) is None   # unmapped: a fault
    assert HostMemory(2 ** 22 + 1).read(addr, 1) is None           # no such process


def test_lowest_free_fd_is_the_next_open_s():
    p = subprocess.Popen(["python3", "-c", "import os; os.read(0, 1); print(os.open('/dev/null', 0))"],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    wait_in_call(p.pid, 0, "0x0")
    fd = lowest_free_fd(p.pid)
    out, _ = p.communicate("x")
    assert int(out) == fd


class Caller:
    uid = gid = 0
    umask = 0o022

    def __init__(self, pid):
        self.pid = pid


@contextlib.contextmanager
def child_in_openat(tmp_path, flags=os.O_RDONLY | os.O_CLOEXEC):
    """A child blocked in openat(AT_FDCWD, "fifo", flags)."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    pid = os.fork()
    if pid == 0:
        os.chdir(tmp_path)
        try:
            os.open("fifo", flags)
        finally:
            os._exit(0)
    try:
        wait_in_call(pid, 257)
        yield pid
    finally:
        os.close(os.open(fifo, os.O_WRONLY))
        os.waitpid(pid, 0)


def booted():
    from fakefs import sim
    from fakefs.sim.clock import ManualClock
    k = sim.boot(seed=1, nr_cpus=1, clock=ManualClock(), host_kallsyms=False)
    k.driver.host.user_memory = HostMemory
    write_file(k, T + "kprobe_events", b"")
    return k


def own_lines(k, what):
    return [ln for ln in read_file(k, T + "trace").decode().splitlines()
            if what in ln and not ln.startswith("#")]


async def test_an_open_through_the_mount_is_the_caller_s_openat(tmp_path):
    """sys_enter_openat with the registers the caller passed, sys_exit with
    the descriptor it will get; an eprobe reads the name from its memory."""
    k = booted()
    write_file(k, T + "dynamic_events",
                 b"e:myopen syscalls/sys_enter_openat file=+0($filename):ustring\n")
    write_file(k, T + "events/eprobes/myopen/enable", b"1")
    for ev in ("sys_enter_openat", "sys_exit_openat"):
        write_file(k, T + "events/syscalls/%s/enable" % ev, b"1")
    fs = FakeFS(k)
    with child_in_openat(tmp_path) as pid:
        fd = lowest_free_fd(pid)
        ino = k.tree.root.walk(T + "README").ino
        fi = await fs.open(ino, os.O_RDONLY, Caller(pid))
        await fs.release(fi.fh)
    enter = own_lines(k, "sys_openat(")
    ours = [ln for ln in enter if "dfd: ffffff9c" in ln and "flags: %x," % (os.O_RDONLY | os.O_CLOEXEC) in ln]
    assert len(ours) == 1, enter
    task = ours[0].split()[0]                  # comm-pid of the caller's task here
    exits = [ln for ln in own_lines(k, "sys_openat -> ") if ln.split()[0] == task]
    assert len(exits) == 1 and exits[0].endswith("sys_openat -> 0x%x" % fd)
    assert [ln for ln in own_lines(k, "myopen:") if ln.split()[0] == task][0].endswith(
        'file="fifo"')


async def test_a_failed_lookup_ends_the_caller_s_open_with_its_error(tmp_path):
    k = booted()
    write_file(k, T + "events/raw_syscalls/sys_exit/enable", b"1")
    fs = FakeFS(k)
    with child_in_openat(tmp_path) as pid:
        with pytest.raises(pyfuse3.FUSEError):
            await fs.lookup(pyfuse3.ROOT_INODE, b"nothing-here", Caller(pid))
    got = own_lines(k, "sys_exit: NR 257 = %d" % -errno.ENOENT)
    assert len(got) == 1, own_lines(k, "NR 257")


async def test_a_lookup_on_the_way_of_an_o_creat_open_is_no_event(tmp_path):
    """The walk of an O_CREAT open goes on after "no such entry" (the file
    is made): the lookup does not end the call."""
    k = booted()
    write_file(k, T + "events/raw_syscalls/sys_exit/enable", b"1")
    fs = FakeFS(k)
    # a fifo opened O_CREAT still blocks: it exists
    with child_in_openat(tmp_path, os.O_RDONLY | os.O_CREAT) as pid:
        with pytest.raises(pyfuse3.FUSEError):
            await fs.lookup(pyfuse3.ROOT_INODE, b"nothing-here", Caller(pid))
    assert own_lines(k, "NR 257 =") == []


async def test_no_event_when_the_caller_is_in_another_call(tmp_path):
    """A request whose caller is in a call it does not do the work of (an
    open while the caller reads) makes no event: nothing is made up."""
    k = booted()
    write_file(k, T + "events/raw_syscalls/enable", b"1")
    fs = FakeFS(k)
    p = subprocess.Popen(["python3", "-c", "import os; os.read(0, 10)"], stdin=subprocess.PIPE)
    try:
        wait_in_call(p.pid, 0, "0x0")
        ino = k.tree.root.walk(T + "README").ino
        fi = await fs.open(ino, os.O_RDONLY, Caller(p.pid))
        await fs.release(fi.fh)
    finally:
        p.communicate(b"x")
    assert own_lines(k, "NR 0 ") == [] and own_lines(k, "NR 257 ") == []


@requires_fuse
def test_cat_through_a_mount_shows_its_open_and_reads(tracing):
    """Through the daemon: cat's openat() of a file of the mount returns a
    descriptor, its read()s the bytes it gets (the last one 0), a missing
    file's openat() -ENOENT; all in cat's own task."""
    for ev in ("sys_enter_openat", "sys_exit_openat", "sys_enter_read", "sys_exit_read"):
        with open(os.path.join(tracing, "events/syscalls", ev, "enable"), "w") as fh:
            fh.write("1")
    try:
        with open(os.path.join(tracing, "trace"), "w") as fh:
            fh.write("")
        size = len(subprocess.run(["cat", "README"], cwd=tracing, capture_output=True,
                                  check=True).stdout)
        subprocess.run(["cat", "no-such-file"], cwd=tracing, capture_output=True)
    finally:
        with open(os.path.join(tracing, "events/syscalls/enable"), "w") as fh:
            fh.write("0")
    with open(os.path.join(tracing, "trace")) as fh:
        cat = [ln.split(": ", 1)[1].rstrip() for ln in fh if ln.lstrip().startswith("cat-")]
    assert "sys_openat -> 0x3" in cat and "sys_openat -> 0xfffffffffffffffe" in cat, cat
    reads = [int(ln.rsplit("0x", 1)[1], 16) for ln in cat if ln.startswith("sys_read -> ")]
    assert sum(reads) == size and reads[-1] == 0, cat
