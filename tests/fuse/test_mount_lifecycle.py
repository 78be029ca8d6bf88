"""Mount life cycle: umount -z with waiters, stale mounts, double mounts, libfuse's reasons."""

from __future__ import annotations

import contextlib
import errno
import os
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time

import pytest

import mountlib

pytestmark = mountlib.requires_fuse

ENV = dict(os.environ, PYTHONPATH=mountlib.REPO)


def fakefs(*args, timeout=60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "fakefs", *args], env=ENV, timeout=timeout,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)






@contextlib.contextmanager
def scratch_dir():
    d = tempfile.mkdtemp(prefix="fakefs-test-")
    try:
        yield d
    finally:
        for _ in range(3):
            if not mountlib.is_mounted(d):
                break
            subprocess.run(["fusermount3", "-u", "-z", d], stderr=subprocess.DEVNULL)
        with contextlib.suppress(OSError):
            os.rmdir(d)


def test_umount_lazy_with_blocked_reader_and_poller():
    with scratch_dir() as mnt:
        r = fakefs("mount", mnt)
        assert r.returncode == 0, r.stderr
        pid = mountlib.daemon_pid(mnt)
        tracing = os.path.join(mnt, "sys/kernel/tracing")
        with open(os.path.join(tracing, "tracing_on"), "w") as fh:
            fh.write("0")
        reader = subprocess.Popen(["cat", os.path.join(tracing, "trace_pipe")],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        fd = os.open(os.path.join(tracing, "trace_pipe"), os.O_RDONLY | os.O_NONBLOCK)
        polled: dict = {}

        def poller():
            p = select.poll()
            p.register(fd, select.POLLIN)
            t = time.monotonic()
            polled["events"] = p.poll(10_000)
            polled["at"] = time.monotonic()
            polled["took"] = polled["at"] - t
        th = threading.Thread(target=poller, daemon=True)
        th.start()
        try:
            time.sleep(0.5)
            assert reader.poll() is None, "the reader should be blocked"
            t0 = time.monotonic()
            r = fakefs("umount", "-z", mnt)
            assert r.returncode == 0, r.stderr
            with contextlib.suppress(subprocess.TimeoutExpired):
                reader.wait(timeout=3)
            t_reader = time.monotonic() - t0
            th.join(timeout=3)
            while not mountlib.gone(pid) and time.monotonic() - t0 < 3:
                time.sleep(0.05)
            t_daemon = time.monotonic() - t0
        finally:
            reader.kill()
            if not mountlib.gone(pid):
                os.kill(pid, signal.SIGTERM)
            reader.wait()
            with contextlib.suppress(OSError):
                os.close(fd)
        assert t_reader <= 1.0, f"blocked reader answered after {t_reader:.2f} s"
        assert reader.returncode != 0
        # answered within 1 s of the umount (it had waited 0.5 s before)
        assert polled.get("at", t0 + 99) - t0 <= 1.0, polled
        assert mountlib.gone(pid) and t_daemon <= 2.0, f"daemon still there after {t_daemon:.2f} s"
        assert not mountlib.is_mounted(mnt)


# (run in a mount namespace of its own: one another test makes meanwhile
# copies every mount there is, and the copy holds the mount, so its daemon
# lives on as long as that namespace: seen in CI, twice)
LAZY_UMOUNT = """
import os, subprocess, sys, tempfile, time
import mountlib
mnt = tempfile.mkdtemp(prefix="fakefs-test-")
run = lambda *a: subprocess.run([sys.executable, "-m", "fakefs", *a], timeout=60).returncode
assert run("mount", mnt) == 0
pid = mountlib.daemon_pid(mnt)
assert run("umount", "-z", mnt) == 0
t0 = time.monotonic()
while not mountlib.gone(pid) and time.monotonic() - t0 < 5:
    time.sleep(0.05)
print("gone" if mountlib.gone(pid) else "alive", flush=True)
os.rmdir(mnt)
"""


def test_umount_lazy_without_waiters_stops_once_files_close():
    env = dict(ENV, PYTHONPATH=os.pathsep.join((mountlib.REPO, os.path.dirname(mountlib.__file__))))
    r = subprocess.run(["unshare", "-m", "--propagation", "private", sys.executable, "-c",
                        LAZY_UMOUNT], env=env, timeout=90, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True)
    assert r.returncode == 0 and r.stdout == "gone\n", (r.stdout, r.stderr)


def test_stale_mount_after_sigkill_is_recovered():
    with scratch_dir() as mnt:
        assert fakefs("mount", mnt).returncode == 0
        pid = mountlib.daemon_pid(mnt)
        os.kill(pid, signal.SIGKILL)
        while not mountlib.gone(pid):
            time.sleep(0.02)
        with pytest.raises(OSError) as e:
            os.listdir(mnt)
        # ENOTCONN: the stale mount (ECONNABORTED when the request raced
        # the abort: the dead daemon's /dev/fuse is released after it is gone)
        assert e.value.errno in (errno.ENOTCONN, errno.ECONNABORTED)
        r = fakefs("mount", mnt)
        assert r.returncode == 0, r.stderr
        assert "stale mount" in r.stderr
        with open(os.path.join(mnt, "sys/kernel/tracing/tracing_on")) as fh:
            assert fh.read() == "1\n"
        # a path *inside* a stale mount: the message names the command to run
        pid = mountlib.daemon_pid(mnt)
        os.kill(pid, signal.SIGKILL)
        while not mountlib.gone(pid):
            time.sleep(0.02)
        time.sleep(1.1)                                # past the attribute timeout
        r = fakefs("mount", os.path.join(mnt, "proc"))
        assert r.returncode != 0
        assert f"fusermount3 -u -z {mnt}" in r.stderr, r.stderr


def test_umount_of_a_stale_mount_still_held_says_so_and_suggests_z():
    with scratch_dir() as mnt:
        assert fakefs("mount", mnt).returncode == 0
        holder = subprocess.Popen(["sleep", "60"], cwd=os.path.join(mnt, "sys/kernel/tracing"))
        try:
            r = fakefs("umount", mnt)                 # the daemon alive: files open
            assert r.returncode != 0
            assert "files are open" in r.stderr and str(holder.pid) in r.stderr, r.stderr
            pid = mountlib.daemon_pid(mnt)
            os.kill(pid, signal.SIGKILL)
            while not mountlib.gone(pid):
                time.sleep(0.02)
            r = fakefs("umount", mnt)                 # stale, and still held
            assert r.returncode != 0
            assert "no such directory" not in r.stderr, r.stderr
            assert "stale mount" in r.stderr and str(holder.pid) in r.stderr, r.stderr
            assert f"fakefs umount -z {mnt}" in r.stderr, r.stderr
            r = fakefs("umount", os.path.join(mnt, "proc"))    # a path inside it
            assert r.returncode != 0
            assert f"inside a stale FUSE mount on {mnt}" in r.stderr, r.stderr
            assert f"fakefs umount -z {mnt}" in r.stderr, r.stderr
            assert fakefs("umount", "-z", mnt).returncode == 0     # what it suggests works
            assert not mountlib.is_mounted(mnt)
        finally:
            holder.kill()
            holder.wait()
        r = fakefs("umount", mnt)
        assert r.returncode != 0 and "nothing is mounted there" in r.stderr, r.stderr
        r = fakefs("umount", os.path.join(mnt, "missing"))
        assert r.returncode != 0 and "no such directory" in r.stderr, r.stderr


def test_second_mount_is_refused():
    with mountlib.mounted() as mnt:
        pid = mountlib.daemon_pid(mnt)
        r = fakefs("mount", mnt)
        assert r.returncode != 0
        assert "already a mount point" in r.stderr and str(pid) in r.stderr, r.stderr
        assert f"fakefs umount {mnt}" in r.stderr
        with open("/proc/self/mounts") as fh:
            assert sum(line.split()[1] == mnt for line in fh) == 1


@pytest.mark.parametrize("foreground", [False, True])
def test_libfuse_reason_is_reported(foreground):
    with scratch_dir() as mnt:
        args = ["mount"] + (["-f"] if foreground else []) + ["-o", "no_such_option", mnt]
        r = fakefs(*args)
        assert r.returncode != 0
        assert "fuse: unknown option(s): `-o no_such_option'" in r.stderr, r.stderr
        assert not mountlib.is_mounted(mnt)


def test_bad_tracefs_option_value():
    with scratch_dir() as mnt:
        r = fakefs("mount", "-o", "mode=9z", mnt)
        assert r.returncode != 0 and "mode=" in r.stderr
        assert not mountlib.is_mounted(mnt)
