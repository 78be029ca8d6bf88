"""Helpers for tests that mount fakefs (import as ``mountlib``; conftest names collide)."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import tempfile

import pytest

from fakefs.fuse.mountpoint import is_mounted, unmount_and_wait  # tests import is_mounted from here

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def fuse_problem() -> str | None:
    """Why FUSE mounts cannot be made here (None: they can)."""
    if not os.path.exists("/dev/fuse"):
        return "needs /dev/fuse (the fuse module)"
    if not any(os.path.exists(os.path.join(p, "fusermount3"))
               for p in os.environ.get("PATH", "").split(":")):
        return "needs fusermount3 (apt-get install fuse3)"
    if os.geteuid() != 0 and not os.access("/dev/fuse", os.R_OK | os.W_OK):
        return ("needs a /dev/fuse this user can open (it is not; Debian's default is 0666: "
                "chmod 0666 /dev/fuse as root)")
    return None


def fuse_available() -> bool:
    return fuse_problem() is None


requires_fuse = pytest.mark.skipif(not fuse_available(), reason=fuse_problem() or "")
requires_root = pytest.mark.skipif(
    os.geteuid() != 0, reason="needs root: acts as another uid (setuid) on the mount")


@contextlib.contextmanager
def mounted(cmdline: str = "", seed: int = 1, persona: str | None = None, opts: str | None = None,
            extra_args: list[str] | None = None):
    """Start a fakefs daemon on a fresh directory; unmount on exit."""
    mnt = tempfile.mkdtemp(prefix="fakefs-test-")
    log = mnt + ".log"
    cmd = [sys.executable, "-m", "fakefs", "mount", "--seed", str(seed), "--log", log]
    if cmdline:
        cmd += ["--cmdline", cmdline]
    if persona:
        cmd += ["--persona", persona]
    if opts:
        cmd += ["-o", opts]
    cmd += list(extra_args or [])
    cmd.append(mnt)
    env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
    try:
        subprocess.run(cmd, check=True, env=env, timeout=60)
    except BaseException:
        with contextlib.suppress(OSError):
            os.rmdir(mnt)
        with contextlib.suppress(OSError):
            os.unlink(log)
        raise
    try:
        assert is_mounted(mnt)
        yield mnt
    finally:
        unmount_and_wait(mnt)
        with contextlib.suppress(OSError):
            os.rmdir(mnt)
        if os.path.exists(log):
            with open(log) as fh:
                text = fh.read()
            os.unlink(log)
            if "Traceback" in text:
                print(text, file=sys.stderr)


def daemon_pid(mnt: str) -> int:
    """The pid of the fakefs daemon serving ``mnt``."""
    from fakefs.fuse.mountpoint import daemon_pids
    pids = daemon_pids(os.path.realpath(mnt)) or daemon_pids(mnt)
    if not pids:
        raise AssertionError("no daemon for " + mnt)
    return pids[0]


def gone(pid: int) -> bool:
    """The process exited (or is a zombie nobody reaped yet)."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except OSError:
        return True


@contextlib.contextmanager
def fresh_mountpoint(prefix: str = "fakefs-"):
    """A path that does not exist yet, for commands that make their own
    mount point and mount there; whatever is left mounted is detached and
    the directory removed afterwards."""
    mnt = tempfile.mkdtemp(prefix=prefix)
    os.rmdir(mnt)
    try:
        yield mnt
    finally:
        if os.path.isdir(mnt) and is_mounted(mnt):
            subprocess.run(["fusermount3", "-u", "-z", mnt], check=False)
        with contextlib.suppress(OSError):
            os.rmdir(mnt)
