"""Run the simulated kernel behind a FUSE mount (one daemon, one mount)."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import threading

import pyfuse3
import trio

from .fuse.adapter import FakeFS
from .kernel.init import Kernel

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


def boot_kernel(args) -> Kernel:
    kernel = Kernel(persona=args.persona, cmdline=args.cmdline or "", seed=args.seed,
                    config_overrides=args.config or None)
    kernel.host_comm = host_comm
    kernel.boot()
    return kernel


def _force_exit(mountpoint: str) -> None:
    log.warning("requests still in flight %.1f s after the stop signal: detaching %s",
                EXIT_GRACE_S, mountpoint)
    subprocess.run(["fusermount3", "-u", "-z", mountpoint], check=False,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    os._exit(0)


async def _serve(ops: FakeFS) -> None:
    async with trio.open_nursery() as nursery:
        nursery.start_soon(ops.poll_watcher)
        await pyfuse3.main(max_tasks=MAX_TASKS)
        nursery.cancel_scope.cancel()


def serve(kernel: Kernel, mountpoint: str, opts: list[str], ready_fd: int | None = None,
          on_ready=None) -> int:
    ops = FakeFS(kernel)
    try:
        pyfuse3.init(ops, mountpoint, fuse_options(opts))
    except Exception as e:
        msg = f"fakefs: cannot mount {mountpoint}: {e}\n"
        if ready_fd is not None:
            os.write(ready_fd, msg.encode())
            os.close(ready_fd)
        else:
            sys.stderr.write(msg)
        return 1
    ops.mounted = True

    def stop(signum, frame):
        if ops.terminating:
            return
        ops.terminate()
        pyfuse3.terminate()
        # Should a request still hold the main loop, the mount does not
        # outlive the daemon: detach it and leave.
        t = threading.Timer(EXIT_GRACE_S, _force_exit, (mountpoint,))
        t.daemon = True
        t.start()
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGHUP, stop)
    if ready_fd is not None:
        os.write(ready_fd, b"OK\n")
        os.close(ready_fd)
    if on_ready is not None:
        on_ready()
    try:
        trio.run(_serve, ops)
    finally:
        pyfuse3.close(unmount=True)
    return 0
