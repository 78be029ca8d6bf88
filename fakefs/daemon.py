"""Run the simulated kernel behind a FUSE mount (one daemon, one mount)."""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
import sys
import threading

import pyfuse3
import trio

from .fuse.adapter import FakeFS
from .fuse.cnproc import (HostWatch, host_affinity, host_pid_exists, host_pid_max, host_start,
                          open_proc_connector)
from .fuse import noflush
from .fuse.hostlinks import HostLinks
from .fuse.mountpoint import explain_failure
from .fuse.ownership import Ownership, OwnershipError, default_owner, parse_tracefs_options
from .fuse.callerpath import CallerFiles
from .fuse.procfd import HostMemory, mount_dev
from .fuse.runner import Runner
from .fuse.seccomp_notify import SyscallNotifications
from . import sim, vclock
from .kernel.init import Kernel
from .sim.clock import Clock

log = logging.getLogger("fakefs")

MAX_TASKS = 2000
# After SIGTERM/SIGINT/SIGHUP the daemon is gone within this time, whatever
# requests are still in flight.
EXIT_GRACE_S = 1.5


def fuse_options(opts: list[str]) -> set[str]:
    options = set(pyfuse3.default_options)      # default_permissions
    options.discard("default_permissions")
    options.add("default_permissions")
    names = {o.split("=", 1)[0] for o in opts}
    if "fsname" not in names:
        options.add("fsname=fakefs")
    if "subtype" not in names:
        options.add("subtype=fakefs")
    for o in opts:
        if o in ("rw", "defaults", "auto", "noauto", "user", "_netdev", "nofail", "dev", "suid",
                 "exec"):
            continue
        options.add(o)
    return options


def host_comm(pid: int) -> str | None:
    """The comm of a real process talking to the mount (trace_marker writers)."""
    try:
        with open(f"/proc/{pid}/comm") as fh:
            return fh.read().rstrip("\n")
    except OSError:
        return None


def boot_kernel(args) -> tuple[Kernel, HostWatch | None]:
    """The simulated kernel on its machine, and what tells the machine
    about the real processes using the mount (None where the host does
    not report them: then the kernel has no files that need them)."""
    virtual = args.clock == "virtual"
    kernel = Kernel(persona=args.persona, cmdline=args.cmdline or "", seed=args.seed,
                    config_overrides=args.config or None,
                    clock=vclock.virtual_clock() if virtual else Clock())
    kernel.host_comm = host_comm
    kernel.host_start = host_start
    # on a virtual clock the real processes are not followed: what they do
    # happens in real time, which that clock does not follow
    conn = None if virtual else open_proc_connector()
    kernel.host_tasks = conn is not None
    if conn is not None:
        # the real machine hands out its pids again and again: a simulated
        # task holding one would keep a real process from being its task
        kernel.sched.pid_floor = host_pid_max()
    sim.boot_kernel(kernel)
    if virtual:
        vclock.install(kernel.tree, kernel.clock)
    watch = None
    if kernel.workload is not None:
        machine = sim.attach(kernel)
        machine.host.affinity = host_affinity
        machine.host.user_memory = HostMemory     # probes read a real process's memory
        if conn is not None:
            machine.host.exists = host_pid_exists
            kernel.sched.pid_in_use = machine.host.pid_taken
            watch = HostWatch(conn, machine.host, kernel.clock)
    elif conn is not None:        # no machine to run them (never, today)
        conn.close()
    return kernel, watch


def still_ours(mountpoint: str, dev: str | None) -> bool:
    """Is the mount on ``mountpoint`` still this daemon's?  (After a lazy
    umount the directory may already hold somebody else's mount.)"""
    return dev is None or mount_dev(mountpoint) == dev


def _force_exit(mountpoint: str, dev: str | None) -> None:
    log.warning("requests still in flight %.1f s after the stop signal: detaching %s",
                EXIT_GRACE_S, mountpoint)
    if still_ours(mountpoint, dev):
        subprocess.run(["fusermount3", "-u", "-z", mountpoint], check=False,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    os._exit(0)


async def _serve(ops: FakeFS, syscall_socket: str | None = None) -> None:
    async with trio.open_nursery() as nursery:
        if syscall_socket is not None:     # fakefs sandbox: COMMAND's own calls
            nursery.start_soon(SyscallNotifications(ops, syscall_socket).run)
        nursery.start_soon(ops.poll_watcher)
        nursery.start_soon(ops.detach_watcher)
        nursery.start_soon(ops.heap.housekeeping)
        nursery.start_soon(Runner(ops).run)
        await pyfuse3.main(max_tasks=MAX_TASKS)
        nursery.cancel_scope.cancel()


@contextlib.contextmanager
def captured_stderr(box: list[str]):
    """Collect what libfuse and fusermount3 write on fd 2 (a daemon's
    stderr is a log file, or nothing): the reason a mount failed."""
    sys.stderr.flush()
    mem = os.memfd_create("fakefs-libfuse-stderr")
    saved = os.dup(2)
    os.dup2(mem, 2)
    try:
        yield box
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.lseek(mem, 0, os.SEEK_SET)
        chunks = []
        while chunk := os.read(mem, 65536):
            chunks.append(chunk)
        os.close(mem)
        box.append(b"".join(chunks).decode(errors="replace"))


def mount_error(mountpoint: str, exc: Exception, libfuse_text: str) -> str:
    """libfuse's own reason first (``fuse: unknown option(s): ...``,
    ``fusermount3: failed to open /dev/fuse: Permission denied``), then
    pyfuse3's summary, then a hint."""
    lines = [ln for ln in libfuse_text.strip().splitlines() if ln.strip()]
    msg = f"fakefs: cannot mount {mountpoint}: " + ("; ".join(lines) if lines else str(exc))
    if lines:
        msg += f" ({exc})"
    hint = explain_failure(libfuse_text)
    return msg + "\n" + (hint + "\n" if hint else "")


def make_ownership(kernel: Kernel, opts: list[str]) -> tuple[Ownership, list[str]]:
    rest, tracefs_opts = parse_tracefs_options(opts)
    tracing = kernel.tracing
    own = Ownership(*default_owner(), tracefs_root=tracing.root if tracing is not None else None,
                    tracefs_opts=tracefs_opts)
    return own, rest


def proc_links(prefix: str | None) -> HostLinks | None:
    """``--proc-links PREFIX``: the tree's proc/ shows this process's
    /proc entries it lacks, as links to PREFIX/NAME (fakefs sandbox)."""
    return HostLinks("proc", prefix, "/proc") if prefix else None


def serve(kernel: Kernel, mountpoint: str, opts: list[str], ready_fd: int | None = None,
          on_ready=None, host: HostWatch | None = None, links: HostLinks | None = None,
          syscall_socket: str | None = None) -> int:
    def fail(msg: str) -> int:
        if ready_fd is not None:
            os.write(ready_fd, msg.encode())
            os.close(ready_fd)
        else:
            sys.stderr.write(msg)
        return 1
    try:
        own, opts = make_ownership(kernel, opts)
    except OwnershipError as e:
        return fail(f"fakefs: {e}\n")
    ops = FakeFS(kernel, own, host, links)
    ops.heap.take_over_collector()
    noflush.install()
    libfuse: list[str] = []
    try:
        with captured_stderr(libfuse):
            pyfuse3.init(ops, mountpoint, fuse_options(opts))
    except Exception as e:
        return fail(mount_error(mountpoint, e, "".join(libfuse)))
    if "".join(libfuse).strip():
        sys.stderr.write("".join(libfuse))
    ops.mounted = True
    ops.dev = mount_dev(mountpoint)
    # uprobes name files as their writers see them
    kernel.host_file = CallerFiles(kernel.tree, ops.dev).open

    def stop(signum=None, frame=None):
        if ops.terminating:
            return
        ops.terminate()
        pyfuse3.terminate()
        # Should a request still hold the main loop, the mount does not
        # outlive the daemon: detach it and leave.
        t = threading.Timer(EXIT_GRACE_S, _force_exit, (mountpoint, ops.dev))
        t.daemon = True
        t.start()
    ops.on_detached = stop
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGHUP, stop)
    if ready_fd is not None:
        os.write(ready_fd, b"OK\n")
        os.close(ready_fd)
    if on_ready is not None:
        on_ready()
    if host is not None:
        host.start()
    try:
        trio.run(_serve, ops, syscall_socket)
    except trio.TrioInternalError:
        if not ops.terminating:
            raise
        # pyfuse3.terminate() notifies trio that the FUSE fd closes under the
        # task waiting on it; when the fd also turns readable in that epoll
        # round, trio reschedules the task twice and gives up.  We were
        # stopping: it is a stop (seen under a CPU hog beside a selftest run,
        # on this code and on fd6b669's).
        log.debug("trio gave up while stopping", exc_info=True)
    finally:
        if host is not None:
            host.stop()
        pyfuse3.close(unmount=still_ours(mountpoint, ops.dev))
    return 0
