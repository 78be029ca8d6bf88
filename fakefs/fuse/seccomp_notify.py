"""The system calls of ``fakefs sandbox``'s COMMAND that never reach the mount, as its syscall events.

COMMAND's seccomp filter (``sandbox_seal.NOTIFIED``: ``getppid()``) hands
those calls to a listener, which the sealed process sends here through a
unix socket before it executes COMMAND (``--syscall-socket``); its children
keep the filter, and so the listener.  For each call the daemon gets a
notification (``SECCOMP_IOCTL_NOTIF_RECV``: the caller's pid, the call's
number and six argument registers), makes it the caller's ``sys_enter`` and
``sys_exit`` in the simulated kernel while syscall events are on (the
return value read from the host: ``getppid()``'s is the parent's pid in
``/proc/PID/stat``), then lets the call go on as it would have
(``SECCOMP_USER_NOTIF_FLAG_CONTINUE``): nothing is emulated.  The events come
first, so that they are in the trace before whatever the caller does next.

If the daemon goes away, the calls fail with ENOSYS (the kernel's answer
to a call nobody listens for): the sandbox ends with its daemon anyway.
"""

from __future__ import annotations

import errno
import fcntl
import logging
import os
import select
import socket
import struct

import trio

log = logging.getLogger("fakefs.fuse")

# <linux/seccomp.h>: struct seccomp_notif (80 bytes) and seccomp_notif_resp
# (24), their ioctls ('!' type, _IOWR) and the flag letting a call go on
NOTIF = struct.Struct("=QIIiIQ6Q")
RESP = struct.Struct("=QqiI")
SECCOMP_IOCTL_NOTIF_RECV = 0xC0502100
SECCOMP_IOCTL_NOTIF_SEND = 0xC0182101
SECCOMP_USER_NOTIF_FLAG_CONTINUE = 1
GETPPID = 110


def parent_pid(pid: int, proc: str = "/proc") -> int | None:
    """``getppid()`` of process ``pid`` (from its stat; None: gone)."""
    try:
        with open("%s/%d/stat" % (proc, pid)) as fh:
            text = fh.read()
    except OSError:
        return None
    return int(text.rsplit(")", 1)[1].split()[1])


def return_value(pid: int, nr: int) -> int | None:
    """What the notified call returns (None: not known here)."""
    if nr == GETPPID:
        return parent_pid(pid)
    return None


class SyscallNotifications:
    """The daemon's side: takes listeners at ``path``, serves them."""

    def __init__(self, fs, path: str):
        self.fs = fs
        self.path = path

    async def run(self) -> None:
        sock = trio.socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        await sock.bind(self.path)
        sock.listen(16)
        async with trio.open_nursery() as nursery:
            while True:
                conn, _ = await sock.accept()
                nursery.start_soon(self._take, conn, nursery)

    async def _take(self, conn, nursery) -> None:
        """One sealed process's listener (SCM_RIGHTS), acknowledged."""
        with conn:
            try:
                _msg, anc, _flags, _addr = await conn.recvmsg(1, socket.CMSG_SPACE(4))
            except OSError:
                return
            fds = []
            for level, kind, data in anc:
                if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                    fds += list(struct.unpack("%di" % (len(data) // 4), data[:len(data) // 4 * 4]))
            for fd in fds:
                nursery.start_soon(self._serve, fd)
            try:
                await conn.send(b"K")
            except OSError:
                pass

    async def _serve(self, fd: int) -> None:
        """Every notification of listener ``fd`` until its processes are gone."""
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        try:
            while True:
                await trio.lowlevel.wait_readable(fd)
                events = poller.poll(0)
                if not events:
                    continue
                if not events[0][1] & select.POLLIN:
                    return                    # POLLHUP: no process has the filter any more
                buf = bytearray(NOTIF.size)   # (zeroed, as the kernel wants it)
                try:
                    fcntl.ioctl(fd, SECCOMP_IOCTL_NOTIF_RECV, buf, True)
                except OSError as e:
                    if e.errno in (errno.ENOENT, errno.EINTR):
                        continue              # the caller went away meanwhile
                    raise
                nid, pid, _flags, nr, _arch, _ip, *args = NOTIF.unpack(buf)
                try:
                    await self._record(pid, nr, tuple(args))
                except Exception:
                    log.exception("a notified system call")
                try:
                    fcntl.ioctl(fd, SECCOMP_IOCTL_NOTIF_SEND,
                                RESP.pack(nid, 0, 0, SECCOMP_USER_NOTIF_FLAG_CONTINUE))
                except OSError as e:
                    if e.errno != errno.ENOENT:
                        raise
        finally:
            os.close(fd)

    async def _record(self, pid: int, nr: int, args: tuple) -> None:
        calls = self.fs.syscalls
        if not calls.watching("notified"):
            return
        ret = return_value(pid, nr)
        if ret is not None:
            await calls.notified(pid, nr, args, ret)
