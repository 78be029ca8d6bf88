"""Helpers for tests that mount fakefs (import as ``mountlib``; conftest names collide)."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import tempfile
import time

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def fuse_available() -> bool:
    return os.path.exists("/dev/fuse") and any(
        os.path.exists(os.path.join(p, "fusermount3")) for p in os.environ.get("PATH", "").split(":"))


requires_fuse = pytest.mark.skipif(not fuse_available(), reason="needs /dev/fuse and fusermount3")


def is_mounted(path: str) -> bool:
    path = os.path.realpath(path)
    with open("/proc/self/mounts") as fh:
        return any(line.split()[1] == path for line in fh)


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
    subprocess.run(cmd, check=True, env=env, timeout=60)
    try:
        assert is_mounted(mnt)
        yield mnt
    finally:
        if is_mounted(mnt):
            subprocess.run(["fusermount3", "-u", mnt], check=False)
        for _ in range(50):
            if not is_mounted(mnt):
                break
            time.sleep(0.1)
        else:
            subprocess.run(["fusermount3", "-u", "-z", mnt], check=False)
        with contextlib.suppress(OSError):
            os.rmdir(mnt)
        if os.path.exists(log):
            with open(log) as fh:
                text = fh.read()
            os.unlink(log)
            if "Traceback" in text:
                print(text, file=sys.stderr)
