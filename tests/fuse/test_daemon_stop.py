"""Stopping the daemon while readers are blocked (issue: SIGTERM hung the mount)."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import threading
import time

import pytest

import mountlib

pytestmark = mountlib.requires_fuse






@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_signal_with_blocked_reader_and_poller(sig):
    with mountlib.mounted() as mnt:
        tracing = os.path.join(mnt, "sys/kernel/tracing")
        with open(os.path.join(tracing, "tracing_on"), "w") as fh:
            fh.write("0")
        pid = mountlib.daemon_pid(mnt)
        # a blocked reader (cat) and a poller (select.poll on trace_pipe)
        reader = subprocess.Popen(["cat", os.path.join(tracing, "trace_pipe")],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        poll_result: dict = {}
        fd = os.open(os.path.join(tracing, "trace_pipe"), os.O_RDONLY | os.O_NONBLOCK)

        def poller():
            p = select.poll()
            p.register(fd, select.POLLIN)
            t = time.monotonic()
            poll_result["events"] = p.poll(10_000)
            poll_result["took"] = time.monotonic() - t

        th = threading.Thread(target=poller)
        th.start()
        time.sleep(0.5)
        assert reader.poll() is None, "the reader should be blocked"
        t0 = time.monotonic()
        os.kill(pid, sig)
        reader.wait(timeout=5)
        t_reader = time.monotonic() - t0
        th.join(timeout=5)
        for _ in range(50):
            if mountlib.gone(pid):
                break
            time.sleep(0.05)
        t_daemon = time.monotonic() - t0
        try:
            os.close(fd)
        except OSError:
            pass                        # the mount is gone
        assert t_reader <= 1.0, f"blocked reader answered after {t_reader:.2f} s"
        assert reader.returncode != 0 and b"not connected" in reader.stderr.read()
        assert poll_result.get("took", 99) <= 1.0 + 0.5, poll_result
        assert mountlib.gone(pid) and t_daemon <= 2.0, f"daemon still there after {t_daemon:.2f} s"
        assert not mountlib.is_mounted(mnt)


def test_foreground_sigint_unmounts():
    mnt = mountlib.tempfile.mkdtemp(prefix="fakefs-test-")
    env = dict(os.environ, PYTHONPATH=mountlib.REPO)
    p = subprocess.Popen([sys.executable, "-m", "fakefs", "mount", "-f", mnt], env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        assert b"mounted at" in p.stdout.readline()
        reader = subprocess.Popen(["cat", os.path.join(mnt, "sys/kernel/tracing/trace_pipe")],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(0.3)
        with open(os.path.join(mnt, "sys/kernel/tracing/tracing_on")) as fh:
            assert fh.read() == "1\n"
        p.send_signal(signal.SIGINT)
        rc = p.wait(timeout=2)
        assert rc == 0, p.stdout.read().decode(errors="replace")[-3000:]
        reader.wait(timeout=1)
        assert not mountlib.is_mounted(mnt)
    finally:
        if p.poll() is None:
            p.kill()
        subprocess.run(["fusermount3", "-u", "-z", mnt], check=False, stderr=subprocess.DEVNULL)
        os.rmdir(mnt)
