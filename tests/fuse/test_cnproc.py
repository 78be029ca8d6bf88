"""The proc connector: parsing the host's process events, feeding the machine."""

from __future__ import annotations

import os
import select
import socket
import subprocess
import time

import pytest

from fakefs.fuse import cnproc
from fakefs.fuse.cnproc import (CN_IDX_PROC, CN_MSG, CN_VAL_PROC, FORK_DATA, NLMSG_DONE,
                                NLMSG_HDR, PROC_EVENT, HostWatch, open_proc_connector,
                                parse_message)


def datagram(what, ts, data, cpu=1):
    body = PROC_EVENT.pack(what, cpu, ts) + data
    msg = CN_MSG.pack(CN_IDX_PROC, CN_VAL_PROC, 0, 0, len(body), 0) + body
    return NLMSG_HDR.pack(NLMSG_HDR.size + len(msg), NLMSG_DONE, 0, 0, 0) + msg


def test_parse_fork_exec_comm_exit():
    evs = parse_message(datagram(cnproc.PROC_EVENT_FORK, 7, FORK_DATA.pack(10, 10, 11, 11)))
    evs += parse_message(datagram(cnproc.PROC_EVENT_EXEC, 8, cnproc.EXEC_DATA.pack(11, 11)))
    evs += parse_message(datagram(cnproc.PROC_EVENT_COMM, 9,
                                  cnproc.COMM_DATA.pack(11, 11, b"worker\0")))
    evs += parse_message(datagram(cnproc.PROC_EVENT_EXIT, 10,
                                  cnproc.EXIT_DATA.pack(11, 11, 256, 17)))
    assert [(e.kind, e.pid, e.ppid, e.ts) for e in evs] == [
        ("fork", 11, 10, 7), ("exec", 11, 0, 8), ("comm", 11, 0, 9), ("exit", 11, 0, 10)]
    assert evs[2].comm == "worker" and evs[3].code == 256
    # other connector messages and truncated ones give nothing
    assert parse_message(datagram(0x10, 1, b"\0" * 24)) == []
    assert parse_message(datagram(cnproc.PROC_EVENT_FORK, 7, FORK_DATA.pack(1, 1, 2, 2))[:20]) == []


class FakeConn:
    """The connector's part: the events it took, handed over as queued
    (no program read), the wanted pids told; ``watch`` until woken."""

    def __init__(self, events):
        self.events = events
        self.wanted = set()
        self.watches = 0

    def drain(self):
        out, self.events = self.events, []
        return out

    def pending(self):
        return len(self.events)

    def set_wanted(self, pids):
        self.wanted = set(pids)

    def watch(self, wake_fd):
        self.watches += 1
        select.select([wake_fd], [], [])


class FakeProcs:
    def __init__(self):
        self.followed = set()
        self.got = []

    def caller(self, pid, comm):
        self.followed.add(pid)

    def standing_still(self):
        return False

    def event(self, kind, t, pid, **kw):
        self.got.append((kind, t, pid, kw))
        return t + 5


class FakeClock:
    def from_monotonic(self, ns):
        return ns - 100


def test_drain_hands_over_the_connectors_events_in_kernel_time():
    """The connector keeps the followed processes' events (its rule is
    tested below, on datagrams); the drain hands them over in kernel time
    and says by when the machine will have done them."""
    me = os.getpid()
    evs = [cnproc.ProcEvent("fork", 0, 1000, 7001, 7001, ppid=me),     # a followed parent
           cnproc.ProcEvent("exec", 0, 1500, 7001, 7001),             # its new child
           cnproc.ProcEvent("exit", 0, 2000, 7001, 7001)]
    procs = FollowingProcs()
    conn = FakeConn(evs)
    w = HostWatch(conn, procs, FakeClock())
    w.caller(me)
    assert me in procs.followed and conn.wanted == {me}     # told at once
    assert w.drain() == 1905
    assert [(g[0], g[1], g[2]) for g in procs.got] == [
        ("fork", 900, 7001), ("exec", 1400, 7001), ("exit", 1900, 7001)]
    assert conn.wanted == {me, 7001}           # the child, followed now, told too
    assert w.drain() is None


class FollowingProcs(FakeProcs):
    """Follows forked children as HostProcesses does."""

    def event(self, kind, t, pid, **kw):
        if kind == "fork" and kw["ppid"] in self.followed:
            self.followed.add(pid)
        return super().event(kind, t, pid, **kw)


@pytest.mark.skipif(os.geteuid() != 0, reason="the host reports process events to root only")
def test_the_host_reports_a_fork_and_exec():
    conn = open_proc_connector()
    assert conn is not None
    try:
        # the whole RCVBUF whatever net.core.rmem_max says (the kernel doubles it)
        assert conn.sock.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF) >= 2 * cnproc.RCVBUF
        conn.set_wanted((os.getpid(),))
        p = subprocess.Popen(["true"])
        p.wait()
        deadline = time.monotonic() + 2
        seen = set()
        while time.monotonic() < deadline and not {"fork", "exec", "exit"} <= seen:
            seen |= {e.kind for e in conn.drain() if e.pid == p.pid}
            time.sleep(0.01)
        assert {"fork", "exec", "exit"} <= seen
    finally:
        conn.close()


@pytest.mark.skipif(os.geteuid() != 0, reason="the host reports process events to root only")
def test_an_execs_program_is_read_as_the_host_reports_it():
    """The thread's wait takes the reports without the GIL and reads an
    exec's program at once: it is there after the process is gone.  Only
    the wanted processes' events are kept (a child of one is: its fork
    comes first); an unwanted process's are dropped, its exec not read."""
    conn = open_proc_connector()
    assert conn is not None
    r, w = os.pipe()
    try:
        other = subprocess.Popen(["sleep", "0.3"])
        time.sleep(0.05)
        assert conn.drain() == []                 # nobody wanted: taken and dropped
        conn.set_wanted((os.getpid(),))
        p = subprocess.Popen(["/bin/sh", "-c", "sleep 0.3; exit 0"])
        import threading
        watch = threading.Thread(target=conn.watch, args=(r,))
        watch.start()
        deadline = time.monotonic() + 2
        while time.monotonic() < deadline and conn.pending() < 4:
            time.sleep(0.005)
        os.write(w, b"x")                         # the watch ends when woken
        watch.join(2)
        assert not watch.is_alive()
        p.wait()
        other.wait()
        evs = conn.drain()
        execs = [e for e in evs if e.kind == "exec" and e.program is not None]
        sh = [e for e in execs if e.pid == p.pid]
        assert sh and sh[0].program.filename == "/bin/sh"
        st = os.stat("/bin/sh")
        assert sh[0].program.exe == (st.st_dev, st.st_ino)
        # its child (sleep, forked by the wanted sh) is kept and read too
        assert any(e.program.filename.endswith("/sleep") for e in execs if e.pid != p.pid)
        assert not [e for e in evs if e.pid == other.pid]
    finally:
        os.close(r)
        os.close(w)
        conn.close()


def test_exec_filename_is_the_path_execve_was_given():
    from fakefs.fuse.cnproc import exec_filename
    # /bin/sh is dash on Debian: the comm is "sh", the file "/bin/sh"
    p = subprocess.Popen(["/bin/sh", "-c", "sleep 0.5"])
    try:
        time.sleep(0.1)
        assert exec_filename(p.pid) == "/bin/sh"
    finally:
        p.wait()
    p = subprocess.Popen(["sleep", "0.5"])       # found on PATH: argv[0] is no path
    try:
        time.sleep(0.1)
        got = exec_filename(p.pid)
        assert got.endswith("/sleep") and os.path.isabs(got)
    finally:
        p.wait()


def test_an_exec_read_after_the_process_exited_is_still_a_path():
    """A short command (``/bin/true``) may be a zombie when its exec is
    read: no cmdline, no exe, only its comm; the kernel's filename is the
    path execve() was given, which its shell found on its PATH."""
    from fakefs.fuse.cnproc import exec_filename, on_path
    p = subprocess.Popen(["true"])
    try:
        for _ in range(200):
            with open("/proc/%d/stat" % p.pid) as fh:
                if fh.read().rsplit(")", 1)[1].split()[0] == "Z":
                    break
            time.sleep(0.01)
        got = exec_filename(p.pid)
        assert os.path.isabs(got) and os.path.basename(got) == "true", got
        assert got == on_path("true", os.environ["PATH"])
    finally:
        p.wait()
    assert on_path("true", "/nonexistent:/usr/bin") == "/usr/bin/true"
    assert on_path("no-such-program-x", "/usr/bin:/bin") == ""
    assert on_path("true", "relative:/bin") == "/bin/true"


def test_the_watch_takes_reports_without_python_and_stops_at_once():
    """The thread hands the socket to the connector once (which takes the
    host's reports in C until woken): no Python wake-ups; stop() ends it."""
    conn = FakeConn([])
    w = HostWatch(conn, FakeProcs(), FakeClock())
    w.start()
    time.sleep(0.35)
    assert w.thread.is_alive() and conn.watches == 1
    t0 = time.monotonic()
    w.stop()
    w.thread.join(2)
    assert not w.thread.is_alive() and time.monotonic() - t0 < 0.5


@pytest.mark.skipif(os.geteuid() != 0, reason="the host reports process events to root only")
def test_a_short_lived_programs_exec_is_read_while_python_is_busy():
    """The daemon's main thread holds the GIL (simulating): the watch still
    reads the exec'd file of a process that lives 20 ms (in Python, behind
    a busy daemon, ``ls``, living 5 ms, was gone before its exe was read;
    here the GIL is not handed over at all while it lives)."""
    import sys
    conn = open_proc_connector()
    assert conn is not None
    procs = FakeProcs()
    w = HostWatch(conn, procs, FakeClock())
    w.caller(os.getpid())
    w.start()
    time.sleep(0.1)                         # the thread is in the connector's watch
    interval = sys.getswitchinterval()
    try:
        sys.setswitchinterval(2.0)          # no thread gets the GIL from this one
        pid = os.posix_spawn("/bin/sleep", ["/bin/sleep", "0.02"], os.environ)
        t0 = time.monotonic()
        while time.monotonic() - t0 < 0.3:  # busy, holding the GIL
            pass
        sys.setswitchinterval(interval)
        os.waitpid(pid, 0)
        w.drain()
    finally:
        sys.setswitchinterval(interval)
        w.stop()
        w.thread.join(2)
        conn.close()
    execs = [(g[2], g[3]) for g in procs.got if g[0] == "exec"]
    st = os.stat("/bin/sleep")
    assert (pid, {"filename": "/bin/sleep", "exe": (st.st_dev, st.st_ino)}) in execs


def test_while_the_machine_stands_still_names_are_read_for_live_processes_only(monkeypatch):
    """Nobody sees the machine: of an exec the connector did not read,
    the drain reads the name of a process that lives on, not of one whose
    exit comes with it (a shell's commands, mostly)."""
    me = os.getpid()
    reads = []
    monkeypatch.setattr(cnproc, "_proc_read", lambda pid, what: reads.append((pid, what)) or "cat")

    class Still(FakeProcs):
        def standing_still(self):
            return True
    conn = FakeConn([cnproc.ProcEvent("fork", 0, 1000, 7001, 7001, ppid=me),
                     cnproc.ProcEvent("exec", 0, 1100, 7001, 7001),
                     cnproc.ProcEvent("fork", 0, 1200, 7002, 7002, ppid=me),
                     cnproc.ProcEvent("exec", 0, 1300, 7002, 7002),
                     cnproc.ProcEvent("exit", 0, 1400, 7002, 7002)])
    procs = Still()
    w = HostWatch(conn, procs, FakeClock())
    procs.followed.add(me)
    w.drain()
    assert reads == [(7001, "comm")]
    assert [(g[0], g[2], g[3].get("filename")) for g in procs.got if g[0] == "exec"] == [
        ("exec", 7001, "cat"), ("exec", 7002, "")]


def test_host_start_tells_a_process_by_its_start_time():
    """Field 22 of /proc/PID/stat, read past the comm (which may hold ") "):
    a process started later has a later time, one gone has none."""
    import subprocess
    import sys
    from fakefs.fuse.cnproc import host_start
    code = ("import sys; open('/proc/self/comm', 'w').write('a) 1 2 3'); "
            "print(flush=True); sys.stdin.read()")
    p = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True)
    try:
        p.stdout.readline()
        assert open("/proc/%d/comm" % p.pid).read() == "a) 1 2 3\n"
        mine, its = host_start(os.getpid()), host_start(p.pid)
        assert its is not None and mine is not None and its >= mine
        with open("/proc/%d/stat" % p.pid) as fh:
            assert fh.read().split()[21 + 3] == str(its)      # the comm is 4 words here
        assert host_start(p.pid) == its
    finally:
        p.stdin.close()
        p.wait()
    assert host_start(p.pid) is None


def test_host_affinity_is_none_for_every_cpu_and_the_mask_when_pinned(monkeypatch):
    """Asked during a request: it reads no file (os.cpu_count() reads
    /sys/devices/system/cpu, bound to the mount itself in the selftest's
    namespace: the daemon hung on its own request)."""
    from fakefs.fuse.cnproc import host_affinity

    def no_files(*a, **k):
        raise AssertionError("host_affinity read a file")
    if (os.cpu_count() or 1) < 2:
        pytest.skip("needs 2 CPUs to pin a process to one")
    monkeypatch.setattr(os, "cpu_count", no_files)
    p = subprocess.Popen(["taskset", "-c", "1", "sleep", "5"])
    q = subprocess.Popen(["sleep", "5"])
    try:
        deadline = time.monotonic() + 5          # taskset pins itself, then execs sleep
        while host_affinity(p.pid) is None and time.monotonic() < deadline:
            time.sleep(0.01)
        assert host_affinity(p.pid) == frozenset({1})
        assert host_affinity(q.pid) is None
    finally:
        for x in (p, q):
            x.kill()
            x.wait()
    assert host_affinity(p.pid) is None            # gone


def test_an_execs_file_identity_goes_with_its_program(monkeypatch):
    """The exec'd file's (device, inode) is read with its program while
    someone sees the machine (its uprobes are that inode's); not while it
    stands still, nor for a process gone."""
    me = os.getpid()
    monkeypatch.setattr(cnproc, "exec_filename", lambda pid: "/bin/true")
    monkeypatch.setattr(cnproc, "exe_identity", lambda pid: (8, pid))
    conn = FakeConn([cnproc.ProcEvent("fork", 0, 1000, 7001, 7001, ppid=me),
                     cnproc.ProcEvent("exec", 0, 1100, 7001, 7001),
                     cnproc.ProcEvent("fork", 0, 1200, 7002, 7002, ppid=me),
                     cnproc.ProcEvent("exec", 0, 1300, 7002, 7002),
                     cnproc.ProcEvent("exit", 0, 1400, 7002, 7002)])
    procs = FakeProcs()
    w = HostWatch(conn, procs, FakeClock())
    w.caller(me)
    w.drain()
    assert [(g[2], g[3].get("exe")) for g in procs.got if g[0] == "exec"] == [
        (7001, (8, 7001)), (7002, None)]


def test_exe_identity_is_the_executed_file():
    from fakefs.fuse.cnproc import exe_identity
    p = subprocess.Popen(["/bin/sh", "-c", "sleep 0.5"])
    try:
        time.sleep(0.1)
        st = os.stat(os.path.realpath("/bin/sh"))
        assert exe_identity(p.pid) == (st.st_dev, st.st_ino)
    finally:
        p.wait()
    assert exe_identity(p.pid) is None


def test_the_reports_keep_the_wanted_processes_and_their_children():
    """The C side's rule, on datagrams sent through a socket pair: a wanted
    process's events and its children's (their fork first) are kept in
    order, anybody else's dropped; an exec of a wanted process that lives
    is read at once (this process's own), one gone has no program."""
    from fakefs.fuse._proc_reports import Reports
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    me = os.getpid()
    try:
        r = Reports(a.fileno())
        r.set_wanted([100, me])
        sent = [datagram(cnproc.PROC_EVENT_FORK, 1, FORK_DATA.pack(100, 100, 4000001, 4000001)),
                datagram(cnproc.PROC_EVENT_EXEC, 2, cnproc.EXEC_DATA.pack(4000001, 4000001)),
                datagram(cnproc.PROC_EVENT_FORK, 3, FORK_DATA.pack(200, 200, 201, 201)),
                datagram(cnproc.PROC_EVENT_EXEC, 4, cnproc.EXEC_DATA.pack(201, 201)),
                datagram(cnproc.PROC_EVENT_EXEC, 5, cnproc.EXEC_DATA.pack(me, me)),
                datagram(cnproc.PROC_EVENT_EXIT, 6, cnproc.EXIT_DATA.pack(4000001, 4000001, 0, 17))]
        for d in sent:
            b.send(d)
        got = r.take()
        kinds = [(e.kind, e.pid) for data, _ in got for e in parse_message(data)]
        assert kinds == [("fork", 4000001), ("exec", 4000001), ("exec", me), ("exit", 4000001)]
        progs = [p for _, p in got]
        assert progs[1] is None                       # gone (never was)
        st = os.stat("/proc/self/exe")
        assert progs[2][:2] == (st.st_dev, st.st_ino)
        assert progs[2][2] == os.fsencode(os.readlink("/proc/self/exe"))
        assert r.take() == [] and r.pending() == 0
    finally:
        a.close()
        b.close()


def test_the_watch_ends_when_its_socket_fails():
    """A descriptor that cannot be received from (here a pipe: ENOTSOCK)
    ends the watch with OSError rather than a loop at full speed."""
    import errno
    import threading
    from fakefs.fuse._proc_reports import Reports
    rd, wr = os.pipe()
    wake_r, wake_w = os.pipe()
    try:
        rep = Reports(rd)
        os.write(wr, b"x")                            # readable, but no socket
        out = []

        def watch():
            try:
                rep.watch(wake_r)
            except OSError as e:
                out.append(e.errno)
        t = threading.Thread(target=watch)
        t.start()
        t.join(2)
        assert not t.is_alive() and out == [errno.ENOTSOCK] and rep.failed == errno.ENOTSOCK
    finally:
        os.write(wake_w, b"x")
        for fd in (rd, wr, wake_r, wake_w):
            os.close(fd)
