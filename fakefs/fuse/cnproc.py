"""The real machine's process events, from the Linux proc connector.

The processes that use the mount (ftracetest's shells, ``cat``, ``echo``)
are tasks of the simulated kernel too: their forks, execs and exits are
its ``sched_process_fork``/``exec``/``exit`` and ``kernel_clone`` calls.
The host kernel reports them on a netlink socket (``NETLINK_CONNECTOR``,
group ``CN_IDX_PROC``, include/uapi/linux/cn_proc.h), queued inside
``copy_process()``/``exec``/``do_exit`` — before the child runs — so a
drain at the start of every FUSE request sees every fork that request
could depend on.

Only root in the initial user and pid namespaces may listen (the host
refuses others, or sends nothing): :func:`open_proc_connector` then
returns None and the simulated kernel does without them.
"""

from __future__ import annotations

import os
import shutil
import socket
import struct
import threading
import time

from ._proc_reports import Reports

NETLINK_CONNECTOR = 11
CN_IDX_PROC = 1
CN_VAL_PROC = 1
PROC_CN_MCAST_LISTEN = 1
NLMSG_DONE = 3
NLMSG_HDR = struct.Struct("=IHHII")          # len, type, flags, seq, pid
CN_MSG = struct.Struct("=IIIIHH")            # idx, val, seq, ack, len, flags
PROC_EVENT = struct.Struct("=IIQ")            # what, cpu, timestamp_ns
PROC_EVENT_FORK = 0x00000001
PROC_EVENT_EXEC = 0x00000002
PROC_EVENT_COMM = 0x00000200
PROC_EVENT_EXIT = 0x80000000
FORK_DATA = struct.Struct("=IIII")            # parent pid, tgid, child pid, tgid
EXEC_DATA = struct.Struct("=II")              # pid, tgid
COMM_DATA = struct.Struct("=II16s")           # pid, tgid, comm
EXIT_DATA = struct.Struct("=IIII")            # pid, tgid, exit code, signal
RCVBUF = 4 << 20
SO_RCVBUFFORCE = getattr(socket, "SO_RCVBUFFORCE", 33)


class Program:
    """What an exec ran, read while the process lived: ``filename`` as
    ``execve()`` was given it (:func:`exec_filename`) and ``exe`` the file's
    (device, inode) (:func:`exe_identity`)."""

    __slots__ = ("filename", "exe")

    def __init__(self, filename: str, exe: tuple[int, int]):
        self.filename = filename
        self.exe = exe


class ProcEvent:
    """One event: ``kind`` is "fork", "exec", "comm" or "exit"; ``ts`` the
    host's CLOCK_MONOTONIC nanoseconds; ``pid``/``tgid`` the task it is
    about (the child of a fork), ``ppid`` the forking task, ``comm`` the new
    name of a "comm" event, ``code`` an exit's status; ``program`` an
    exec's :class:`Program` when it was read as the host reported it."""

    __slots__ = ("kind", "cpu", "ts", "pid", "tgid", "ppid", "comm", "code", "program")

    def __init__(self, kind: str, cpu: int, ts: int, pid: int, tgid: int, ppid: int = 0,
                 comm: str = "", code: int = 0, program: Program | None = None):
        self.kind = kind
        self.cpu = cpu
        self.ts = ts
        self.pid = pid
        self.tgid = tgid
        self.ppid = ppid
        self.comm = comm
        self.code = code
        self.program = program

    def __repr__(self):
        return "ProcEvent(%s %d/%d ppid=%d @%d)" % (self.kind, self.pid, self.tgid, self.ppid,
                                                    self.ts)


def parse_message(data: bytes) -> list[ProcEvent]:
    """The events of one datagram (netlink messages, each a cn_msg)."""
    out = []
    off = 0
    while off + NLMSG_HDR.size <= len(data):
        nl_len, _type, _flags, _seq, _pid = NLMSG_HDR.unpack_from(data, off)
        if nl_len < NLMSG_HDR.size or off + nl_len > len(data):
            break
        body = off + NLMSG_HDR.size
        idx, val, _s, _a, ln, _f = CN_MSG.unpack_from(data, body)
        ev_off = body + CN_MSG.size
        if idx == CN_IDX_PROC and val == CN_VAL_PROC and ln >= PROC_EVENT.size:
            ev = _parse_event(data, ev_off)
            if ev is not None:
                out.append(ev)
        off += (nl_len + 3) & ~3
    return out


def _parse_event(data: bytes, off: int) -> ProcEvent | None:
    what, cpu, ts = PROC_EVENT.unpack_from(data, off)
    off += PROC_EVENT.size
    if what == PROC_EVENT_FORK:
        ppid, _ptgid, pid, tgid = FORK_DATA.unpack_from(data, off)
        return ProcEvent("fork", cpu, ts, pid, tgid, ppid)
    if what == PROC_EVENT_EXEC:
        pid, tgid = EXEC_DATA.unpack_from(data, off)
        return ProcEvent("exec", cpu, ts, pid, tgid)
    if what == PROC_EVENT_COMM:
        pid, tgid, comm = COMM_DATA.unpack_from(data, off)
        return ProcEvent("comm", cpu, ts, pid, tgid,
                         comm=comm.split(b"\0", 1)[0].decode("latin-1"))
    if what == PROC_EVENT_EXIT:
        pid, tgid, code, _sig = EXIT_DATA.unpack_from(data, off)
        return ProcEvent("exit", cpu, ts, pid, tgid, code=code)
    return None


class ProcConnector:
    """A listening proc-connector socket, its reports taken in C
    (``_proc_reports.Reports``: without the GIL, an exec's program read as
    the host reports it).  Only the events of the processes ``set_wanted``
    names (and of the children they fork) are kept; ``watch()`` takes them
    until woken, ``drain()`` hands over what is queued."""

    def __init__(self, sock: socket.socket):
        self.sock = sock
        self.reports = Reports(sock.fileno())

    @property
    def overruns(self) -> int:
        """Times the host dropped events (ENOBUFS)."""
        return self.reports.overruns

    def set_wanted(self, pids) -> None:
        self.reports.set_wanted(pids)

    def watch(self, wake_fd: int) -> None:
        """Take the host's reports as they come (an exec's program read at
        once), without the GIL, until ``wake_fd`` is readable."""
        self.reports.watch(wake_fd)

    def pending(self) -> int:
        return self.reports.pending()

    def drain(self) -> list[ProcEvent]:
        out: list[ProcEvent] = []
        for data, prog in self.reports.take():
            evs = parse_message(data)
            if prog is not None:
                for ev in evs:
                    if ev.kind == "exec":
                        ev.program = _program(ev.pid, *prog)
            out.extend(evs)
        return out

    def close(self) -> None:
        self.sock.close()


def _program(pid: int, dev: int, ino: int, exe: bytes, comm: bytes, argv0: bytes) -> Program:
    return Program(program_path(pid, os.fsdecode(exe), comm.decode("utf-8", "surrogateescape"),
                                argv0.decode("utf-8", "surrogateescape")), (dev, ino))


def _set_rcvbuf(sock: socket.socket, size: int) -> None:
    """``size`` bytes of receive buffer: SO_RCVBUFFORCE (root, as the proc
    connector is) goes past net.core.rmem_max, which is 212992 on a stock
    Debian: 425984 bytes there, ~512 events (measured, 830 bytes each)."""
    try:
        sock.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, size)
    except OSError:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, size)


def open_proc_connector() -> ProcConnector | None:
    """Listen to the host's process events, or None where that is not
    possible (not root, another pid namespace, no CONFIG_PROC_EVENTS)."""
    if os.geteuid() != 0:
        return None
    try:
        sock = socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, NETLINK_CONNECTOR)
    except OSError:
        return None
    try:
        _set_rcvbuf(sock, RCVBUF)
        sock.bind((0, CN_IDX_PROC))
        op = struct.pack("=I", PROC_CN_MCAST_LISTEN)
        msg = CN_MSG.pack(CN_IDX_PROC, CN_VAL_PROC, 0, 0, len(op), 0) + op
        hdr = NLMSG_HDR.pack(NLMSG_HDR.size + len(msg), NLMSG_DONE, 0, 0, os.getpid())
        sock.send(hdr + msg)
        sock.setblocking(False)
    except OSError:
        sock.close()
        return None
    conn = ProcConnector(sock)
    conn.set_wanted((os.getpid(),))
    # prove it: a fork of our own must be reported (with the pid we see:
    # in another pid namespace the host sends nothing or other numbers)
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
    deadline = time.monotonic() + 0.5
    while time.monotonic() < deadline:
        if any(e.kind == "fork" and e.pid == pid for e in conn.drain()):
            conn.set_wanted(())
            return conn
        time.sleep(0.005)
    conn.close()
    return None


def _proc_read(pid: int, what: str) -> str:
    try:
        if what == "exe":
            return os.readlink(f"/proc/{pid}/exe")
        with open(f"/proc/{pid}/{what}") as fh:
            return fh.read().rstrip("\n")
    except OSError:
        return ""


def exe_identity(pid: int):
    """(device, inode) of the file a process executes (its uprobes are
    that inode's), or None once it is gone."""
    try:
        st = os.stat(f"/proc/{pid}/exe")
    except OSError:
        return None
    return (st.st_dev, st.st_ino)


def exec_filename(pid: int) -> str:
    """The file a process just executed, as ``execve()`` was given it
    (``bprm->filename``, whose base name became the comm): argv[0] when it
    is that path, else the program's directory and the comm (``/bin/sh``
    runs ``dash`` but its comm is ``sh``)."""
    return program_path(pid, _proc_read(pid, "exe"), _proc_read(pid, "comm"),
                        _proc_read(pid, "cmdline"))


def program_path(pid: int, exe: str, comm: str, cmdline: str) -> str:
    """:func:`exec_filename` from what was read of ``pid``: its exe link,
    comm and command line."""
    argv0 = cmdline.split("\0", 1)[0]
    if argv0.startswith("/") and os.path.basename(argv0)[:15] == comm:
        return argv0
    if exe and comm:
        return os.path.join(os.path.dirname(exe), comm)
    return exe or on_path(comm, _parent_path(pid)) or comm


DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def _parent_path(pid: int) -> str:
    """The PATH of ``pid``'s parent (the shell that ran it), else a default."""
    stat = _proc_read(pid, "stat")
    try:
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        with open(f"/proc/{ppid}/environ", "rb") as fh:
            env = fh.read().split(b"\0")
    except (IndexError, ValueError, OSError):
        return DEFAULT_PATH
    path = next((e[5:] for e in env if e.startswith(b"PATH=")), None)
    return path.decode("latin-1") if path else DEFAULT_PATH


def on_path(comm: str, path: str) -> str:
    """A process that exited before its program was read (a zombie has
    neither cmdline nor exe): the file a shell's PATH search for its name
    finds first, as execve() was given it, or "" (a name cut to 15
    characters, a program run by a path off PATH).  Only PATH's absolute
    directories count: a relative one was the process's working directory's."""
    if not comm or "/" in comm:
        return ""
    absolute = os.pathsep.join(d for d in path.split(os.pathsep) if d.startswith("/"))
    return shutil.which(comm, path=absolute) or ""


def host_pid_exists(pid: int) -> bool:
    """Does a process of the real machine hold ``pid``?  (The simulated
    kernel's pid allocation skips those pids.)"""
    return os.path.exists(f"/proc/{pid}")


def host_affinity(pid: int) -> frozenset[int] | None:
    """The CPUs the real process ``pid`` may run on (``sched_getaffinity``),
    None when it may run on every CPU the daemon may (the real machine's,
    unless the daemon itself was pinned), or is gone.  System calls only:
    ``os.cpu_count()`` reads /sys/devices/system/cpu, which the selftest's
    namespace binds to the mount itself (the daemon waited on itself)."""
    try:
        mask = os.sched_getaffinity(pid)
        everything = os.sched_getaffinity(0)
    except OSError:
        return None
    return None if mask >= everything else frozenset(mask)


def host_start(pid: int) -> int | None:
    """When the real process ``pid`` started (field 22 of /proc/PID/stat,
    clock ticks since boot): with its pid, who it is.  None: it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            stat = fh.read()
    except OSError:
        return None
    return int(stat[stat.rindex(")") + 2:].split()[19])


def host_pid_max() -> int | None:
    """The real machine's ``kernel.pid_max``: it hands out no pid from
    there on (None where it cannot be read)."""
    try:
        with open("/proc/sys/kernel/pid_max") as fh:
            return int(fh.read())
    except (OSError, ValueError):
        return None


QUEUE_CAP = 2048          # events held back while the machine stands still


class HostWatch:
    """Tells the simulated machine what the real processes that use the
    mount do.  A thread takes the host's events as they come, in C and
    without the GIL (``ProcConnector.watch``), and reads at once what only
    a living process can tell (an exec's program); ``drain()``, at the
    start of every request, hands the machine everything up to that
    instant (an exec whose program was not read then is read if the
    process is still there).  The host reports every process of the
    machine: the connector keeps only the events of the followed ones (it
    is told them after each change) and of the children they fork, and
    only theirs cost a /proc read, so an idle mount on a busy host holds
    nothing back; ``HostProcesses.event`` keeps the rule."""

    def __init__(self, conn: ProcConnector, procs, clock):
        self.conn = conn
        self.procs = procs             # sim.host.HostProcesses
        self.clock = clock             # sim.clock.Clock
        # the thread takes the host's reports until stop() writes here; it
        # never needs the GIL meanwhile (each wake-up in Python took it from
        # the requests being served, and waited for it up to 5 ms a time)
        self.wake_r, self.wake_w = os.pipe()
        self.thread = threading.Thread(target=self._loop, name="cnproc", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        try:
            os.write(self.wake_w, b"x")
        except OSError:
            pass

    def _loop(self) -> None:
        try:
            self.conn.watch(self.wake_r)
        except (OSError, ValueError):
            return

    def _take(self) -> list[list]:
        """What the connector holds, in order: [event, exec's filename
        (None: not read yet), exec's file identity]."""
        got = []
        for ev in self.conn.drain():
            prog = ev.program
            if prog is not None:                # read as the host reported it
                got.append([ev, prog.filename, prog.exe])
            else:
                got.append([ev, None if ev.kind == "exec" else "", None])
        return got

    def _read_programs(self, items, gone=frozenset()) -> None:
        """The program of each exec of ``items`` not read yet, while the
        process lives (while the machine stands still, only its name:
        nobody sees the exec); nothing for the processes ``gone`` (their
        exit is handed over with it)."""
        still = self.procs.standing_still()
        for item in items:
            if item[1] is None:
                pid = item[0].pid
                item[1] = "" if pid in gone else _proc_read(pid, "comm") if still \
                    else exec_filename(pid)
                if not still and pid not in gone:
                    item[2] = exe_identity(pid)

    def pull_in(self, t: int) -> int | None:
        """A request is served at ``t``, where a machine lagging the host got
        (``Pacer.served_at``): what the followed processes did before it
        happens there, in order, as a guest starved of its CPU sees the
        world late; at its host instant, which the machine has yet to reach,
        the request would miss what its caller saw done (``perf ftrace``
        reading the trace after its child exited; a fork right before
        ``echo 0 > enable`` of a kprobe on it).  ``HostProcesses.pull_in``."""
        return self.procs.pull_in(t)

    def backlogged(self) -> bool:
        """Enough queued that it is handed over whatever the request."""
        return self.conn.pending() >= QUEUE_CAP

    def caller(self, pid: int) -> None:
        """``pid`` made a request."""
        if pid and pid not in self.procs.followed:
            self.procs.caller(pid, _proc_read(pid, "comm"))
            self._tell_wanted()

    def _tell_wanted(self) -> None:
        """The connector keeps the events of the followed processes (and
        of the children they fork from then on)."""
        self.conn.set_wanted(self.procs.followed)

    def drain(self) -> int | None:
        """Hand the machine every event so far, at its host instant; the
        instant by which it will have done them (None: nothing of the
        followed processes).  A request served before those instants, where
        a lagging machine got, has them pulled in there (``pull_in``)."""
        got = self._take()
        # those the connector did not read (gone before it took the report)
        self._read_programs(got, {ev.pid for ev, _, _ in got if ev.kind == "exit"})
        settle = None
        for ev, extra, exe in got:
            t = self.clock.from_monotonic(ev.ts)
            if ev.kind == "fork":
                done = self.procs.event("fork", t, ev.pid, ppid=ev.ppid, tgid=ev.tgid)
            elif ev.kind == "exec":
                done = self.procs.event("exec", t, ev.pid, filename=extra, exe=exe)
            elif ev.kind == "comm":
                done = self.procs.event("comm", t, ev.pid, comm=ev.comm)
            else:
                done = self.procs.event("exit", t, ev.pid)
            if done is not None:
                settle = done if settle is None else max(settle, done)
        if got:                                 # forks followed, exits not
            self._tell_wanted()
        return settle
