"""The seal of ``fakefs sandbox``'s COMMAND: what keeps it on the simulated
kernel, applied in COMMAND's process right before it is executed
(``sandbox.cover_proc``), after the fake's files are bound in its mount
namespace.

* **A user namespace of its own** (``enter_userns()``), with the ids of the
  one it comes from mapped to themselves (root stays uid 0, files keep
  their owners), and a mount namespace owned by it: every mount COMMAND
  inherits, the fake's included, is locked to it (a mount or umount that
  would uncover what is below fails), and the kernel gives it no privilege
  over the processes outside (``/proc/PID/root`` of the host's processes,
  the daemon's, ``ptrace``) nor any that a tracefs or debugfs mount needs.
* **No CAP_SYS_ADMIN** (``drop_capabilities()``): dropped from the
  bounding, permitted, effective and inheritable sets, so a root COMMAND
  and whatever it executes get EPERM from ``mount``, ``umount`` and
  ``mount --bind``, as an unprivileged caller does.  (Without the user
  namespace CAP_SYS_PTRACE goes too: a process with more capabilities than
  the caller's is then out of its reach.)
* **What root keeps** (``keep_root_limits()``): the capabilities that let
  root use real-time priorities, a negative nice and locked memory are the
  initial user namespace's, lost in COMMAND's own; its limits of those
  (RLIMIT_RTPRIO, RLIMIT_NICE, RLIMIT_MEMLOCK) are raised to the most
  instead, as far as the sandbox may (as root: all), so ``chrt -f 50``,
  ``nice -n -5`` and ``mlock`` work as for root.  What no limit gives
  (SCHED_DEADLINE, the host's clock, network, modules, dmesg) COMMAND
  cannot do: the host's, they stay as they are.
* **perf_event_open refused** (``refuse_perf_event_open()``): a seccomp
  filter makes it fail with ENOSYS.  perf reads a tracepoint's id from the
  simulated kernel's ``events/*/*/id`` and would open it on the host
  kernel, where the id names another event (a host count, silently wrong);
  a seccomp filter cannot read the attr that says which kind of event is
  asked for, so none is opened.  The filter costs COMMAND's other system
  calls a few instructions; nothing outside COMMAND has it.
* **COMMAND's own system calls told to the daemon** (``NOTIFIED``): the
  same filter hands the calls the simulated kernel records without their
  touching the mount (``getppid()``, which libtracefs's tests make to have
  events of their own) to a listener (seccomp user notification), sent to
  the daemon (``fuse/seccomp_notify.py``), which makes them the process's
  syscall events and lets each go on.  A process can have one listener:
  where it cannot, the filter refuses perf_event_open() alone (said so).

Each step says what it could not do; the sandbox runs COMMAND anyway and
shows the notes (an unsealed sandbox is said so, never silent).
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import resource
import struct

CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
PR_CAPBSET_DROP = 24
PR_CAP_AMBIENT = 47
PR_CAP_AMBIENT_CLEAR_ALL = 4
PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2
CAP_SYS_PTRACE = 19
CAP_SYS_ADMIN = 21
LINUX_CAPABILITY_VERSION_3 = 0x20080522

PERF_REFUSED_ERRNO = errno.ENOSYS
# (audit arch, perf_event_open's numbers) of the ABIs a process of this
# machine can use: x86-64's x32 numbers carry bit 30, i386's are its own
_AUDIT_ARCH_X86_64 = 0xC000003E
_AUDIT_ARCH_I386 = 0x40000003
_AUDIT_ARCH_AARCH64 = 0xC00000B7
_AUDIT_ARCH_ARM = 0x40000028
PERF_EVENT_OPEN_NR = {
    "x86_64": ((_AUDIT_ARCH_X86_64, (298, 0x40000000 | 298)), (_AUDIT_ARCH_I386, (336,))),
    "aarch64": ((_AUDIT_ARCH_AARCH64, (241,)), (_AUDIT_ARCH_ARM, (364,))),
}

# classic BPF, as <linux/filter.h> and <linux/seccomp.h> spell it
_BPF_LD_W_ABS = 0x20
_BPF_JEQ_K = 0x15
_BPF_RET_K = 0x06
_SECCOMP_RET_ALLOW = 0x7FFF0000
_SECCOMP_RET_ERRNO = 0x00050000
_SECCOMP_RET_USER_NOTIF = 0x7FC00000
_SECCOMP_SET_MODE_FILTER = 1
_SECCOMP_FILTER_FLAG_NEW_LISTENER = 1 << 3
_NR_SECCOMP = {"x86_64": 317, "aarch64": 277}
# the system calls handed to the daemon, by ABI (x86-64's only: getppid)
NOTIFIED = {_AUDIT_ARCH_X86_64: (110,)}
_SECCOMP_DATA_NR = 0
_SECCOMP_DATA_ARCH = 4

PERF_NOTE = ("perf_event_open() fails with ENOSYS here: perf would open the simulated "
             "kernel's tracepoint ids on the host kernel, where they name other events; "
             "perf list works, perf stat/record/trace/top do not")


class SealError(Exception):
    """A step of the seal could not be taken (a complete message)."""


def _libc():
    return ctypes.CDLL(None, use_errno=True)


def _check(rc: int, what: str) -> None:
    if rc != 0:
        e = ctypes.get_errno()
        raise SealError("%s: %s" % (what, os.strerror(e)))


# --- the user namespace -------------------------------------------------------------

def identity_map(text: str) -> str:
    """The lines of a ``uid_map``/``gid_map`` (``inside outside count``)
    that map each id this namespace has to itself in a child namespace."""
    lines = []
    for line in text.splitlines():
        fields = line.split()
        if len(fields) == 3:
            lines.append("%s %s %s" % (fields[0], fields[0], fields[2]))
    return "\n".join(lines) + "\n"


def enter_userns() -> None:
    """This process into a new user namespace and a mount namespace of its
    own (its mounts then locked), its ids mapped to themselves.  The map is
    written from the namespace it leaves (a process may map only its own id
    from inside): by a child forked before, which waits on a pipe."""
    maps = {}
    for name in ("uid_map", "gid_map"):
        with open("/proc/self/" + name) as f:
            maps[name] = identity_map(f.read())
    go_r, go_w = os.pipe()
    pid = os.fork()
    if pid == 0:                        # the writer, left outside
        status = 1
        try:
            os.close(go_w)
            if os.read(go_r, 1) == b"1":
                for name in ("uid_map", "gid_map"):
                    with open("/proc/%d/%s" % (os.getppid(), name), "w") as f:
                        f.write(maps[name])
                status = 0
        except OSError:
            pass
        finally:
            os._exit(status)
    os.close(go_r)
    rc = _libc().unshare(CLONE_NEWUSER | CLONE_NEWNS)
    err = ctypes.get_errno()
    os.write(go_w, b"1" if rc == 0 else b"0")
    os.close(go_w)
    _, status = os.waitpid(pid, 0)
    if rc != 0:
        raise SealError("unshare(CLONE_NEWUSER | CLONE_NEWNS): %s" % os.strerror(err))
    if os.waitstatus_to_exitcode(status) != 0:
        raise SealError("the user namespace's uid_map/gid_map could not be written")


# --- limits -------------------------------------------------------------------------

# what root does with a capability of the initial user namespace, and an
# unprivileged process within its limit: RT priority 1-99, nice down to -20
# (limit 20 - nice), locked memory
ROOT_LIMITS = ((resource.RLIMIT_RTPRIO, 99), (resource.RLIMIT_NICE, 40),
               (resource.RLIMIT_MEMLOCK, resource.RLIM_INFINITY))


def keep_root_limits() -> None:
    """Raise each of ROOT_LIMITS as far as this process may (raising a hard
    limit needs CAP_SYS_RESOURCE: then the hard limit is the most)."""
    for res, most in ROOT_LIMITS:
        soft, hard = resource.getrlimit(res)
        for want in ((most, most), (hard, hard)):
            if want[0] == soft and want[1] == hard:
                break
            try:
                resource.setrlimit(res, want)
                break
            except (ValueError, OSError):
                continue


# --- capabilities -------------------------------------------------------------------

class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32),
                ("inheritable", ctypes.c_uint32)]


def drop_capabilities(caps: tuple[int, ...]) -> None:
    """``caps`` out of every set of this process, the bounding set first
    (what is executed later, even as root, cannot get them back)."""
    libc = _libc()
    for cap in caps:
        _check(libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0), "prctl(PR_CAPBSET_DROP, %d)" % cap)
    _check(libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0),
           "prctl(PR_CAP_AMBIENT_CLEAR_ALL)")
    hdr = _CapHeader(LINUX_CAPABILITY_VERSION_3, 0)
    data = (_CapData * 2)()
    _check(libc.capget(ctypes.byref(hdr), data), "capget")
    for cap in caps:
        mask = ~(1 << (cap % 32)) & 0xFFFFFFFF
        d = data[cap // 32]
        d.effective &= mask
        d.permitted &= mask
        d.inheritable &= mask
    _check(libc.capset(ctypes.byref(hdr), data), "capset")


# --- seccomp ------------------------------------------------------------------------

def _insn(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k)


def perf_filter(machine: str | None = None, notify: bool = False) -> bytes | None:
    """The seccomp program refusing perf_event_open on ``machine``'s ABIs
    (None: an architecture this table lacks); with ``notify`` it hands the
    ``NOTIFIED`` calls to the listener too."""
    abis = PERF_EVENT_OPEN_NR.get(machine or platform.machine())
    if abis is None:
        return None
    prog = [_insn(_BPF_LD_W_ABS, _SECCOMP_DATA_ARCH)]
    for arch, numbers in abis:
        notified = NOTIFIED.get(arch, ()) if notify else ()
        # arch matches: load nr, compare with each number (perf's, then the
        # notified ones); else (A still the arch) the next arch's compare,
        # past the n + m + 3 (+ 1 with notified calls) of this one
        body = len(numbers) + len(notified) + 3 + (1 if notified else 0)
        prog.append(_insn(_BPF_JEQ_K, arch, 0, body))
        prog.append(_insn(_BPF_LD_W_ABS, _SECCOMP_DATA_NR))
        for i, nr in enumerate(numbers):
            left = len(numbers) - 1 - i          # perf compares after this one
            prog.append(_insn(_BPF_JEQ_K, nr, left + len(notified) + 1 + (1 if notified else 0), 0))
        for i, nr in enumerate(notified):
            left = len(notified) - 1 - i
            prog.append(_insn(_BPF_JEQ_K, nr, left + 1, 0))
        prog.append(_insn(_BPF_RET_K, _SECCOMP_RET_ALLOW))
        if notified:
            prog.append(_insn(_BPF_RET_K, _SECCOMP_RET_USER_NOTIF))
        prog.append(_insn(_BPF_RET_K, _SECCOMP_RET_ERRNO | PERF_REFUSED_ERRNO))
    prog.append(_insn(_BPF_RET_K, _SECCOMP_RET_ALLOW))
    return b"".join(prog)


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def refuse_perf_event_open() -> None:
    """Install the filter (needs CAP_SYS_ADMIN, or no_new_privs: call it
    before ``drop_capabilities``)."""
    prog = perf_filter()
    if prog is None:
        raise SealError("no seccomp filter for %s: perf_event_open() reaches the host "
                        "kernel here (perf's tracepoint counts are the host's events)"
                        % platform.machine())
    buf = ctypes.create_string_buffer(prog, len(prog))
    fprog = _SockFprog(len(prog) // 8, ctypes.cast(buf, ctypes.c_void_p))
    rc = _libc().prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0)
    if rc != 0:
        raise SealError("seccomp filter: %s: perf_event_open() reaches the host kernel "
                        "here (perf's tracepoint counts are the host's events)"
                        % os.strerror(ctypes.get_errno()))


def notify_to_daemon(socket_path: str) -> None:
    """Install the filter with a listener for the ``NOTIFIED`` calls (its
    one listener: ``seccomp(SECCOMP_FILTER_FLAG_NEW_LISTENER)``) and send
    the listener to the daemon at ``socket_path``; this process keeps no
    copy.  (Needs what ``refuse_perf_event_open`` needs.)"""
    import socket
    machine = platform.machine()
    prog = perf_filter(machine, notify=True)
    nr = _NR_SECCOMP.get(machine)
    if prog is None or nr is None:
        raise SealError("no seccomp listener for %s" % machine)
    buf = ctypes.create_string_buffer(prog, len(prog))
    fprog = _SockFprog(len(prog) // 8, ctypes.cast(buf, ctypes.c_void_p))
    libc = _libc()
    libc.syscall.restype = ctypes.c_long
    try:
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        conn.connect(socket_path)
    except OSError as e:
        raise SealError("the daemon takes no listener (%s)" % e.strerror)
    try:
        fd = libc.syscall(ctypes.c_long(nr), ctypes.c_long(_SECCOMP_SET_MODE_FILTER),
                          ctypes.c_long(_SECCOMP_FILTER_FLAG_NEW_LISTENER), ctypes.byref(fprog))
        if fd < 0:
            raise SealError("seccomp listener: %s" % os.strerror(ctypes.get_errno()))
        try:
            socket.send_fds(conn, [b"L"], [fd])
            conn.recv(1)                 # the daemon has it: then exec
        finally:
            os.close(fd)
    finally:
        conn.close()


# --- all of it ----------------------------------------------------------------------

def seal(syscall_socket: str | None = None) -> tuple[list[str], bool]:
    """Seal this process (then exec COMMAND); returns notes on what could
    not be done, and whether perf_event_open() is refused (the filter is
    in).  ``syscall_socket``: where the daemon takes COMMAND's listener."""
    notes = []
    refused = False
    caps = (CAP_SYS_ADMIN,)
    keep_root_limits()
    try:
        enter_userns()
    except SealError as e:
        notes.append("COMMAND is not in a user namespace of its own (%s): CAP_SYS_PTRACE "
                     "is dropped too" % e)
        caps = (CAP_SYS_ADMIN, CAP_SYS_PTRACE)
    try:
        if syscall_socket is None:
            raise SealError("no daemon socket")
        notify_to_daemon(syscall_socket)
        refused = True
    except SealError as e:
        notes.append("COMMAND's getppid() calls are not events of the simulated kernel (%s)"
                     % e)
    if not refused:
        try:
            refuse_perf_event_open()
            refused = True
        except SealError as e:
            notes.append(str(e))
    try:
        drop_capabilities(caps)
    except SealError as e:
        notes.append("COMMAND keeps CAP_SYS_ADMIN (%s): it can unmount the simulated "
                     "kernel's files" % e)
    return notes, refused
