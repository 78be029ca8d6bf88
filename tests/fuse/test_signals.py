"""A waiting reader's opener has a signal pending (fakefs/fuse/signals.py)."""

from __future__ import annotations

import os
import signal
import subprocess
import time

from fakefs.fuse.signals import SignalWatch, signal_pending

STATUS = "Name:\tcat\nSigQ:\t0/100\nSigPnd:\t%016x\nShdPnd:\t%016x\nSigBlk:\t%016x\nSigIgn:\t%016x\n"


def fake_proc(tmp_path, pid, schedstat=b"100 20 1\n", pnd=0, shd=0, blk=0, ign=0):
    d = tmp_path / str(pid)
    d.mkdir(exist_ok=True)
    (d / "status").write_text(STATUS % (pnd, shd, blk, ign))
    if schedstat is not None:
        (d / "schedstat").write_bytes(schedstat)
    return d


def test_signal_pending_reads_the_masks(tmp_path):
    usr1 = 1 << (signal.SIGUSR1 - 1)
    for kw, want in (({}, False), ({"shd": usr1}, True), ({"pnd": usr1, "blk": usr1}, False),
                     ({"shd": usr1, "ign": usr1}, False),
                     ({"pnd": 1 << 8, "blk": 1 << 8}, True)):       # SIGKILL cannot be blocked
        fake_proc(tmp_path, 7, **kw)
        assert signal_pending(7, str(tmp_path)) is want, kw
    assert signal_pending(8, str(tmp_path)) is True                 # gone: stop waiting


def test_status_is_read_again_only_once_the_process_ran(tmp_path):
    """Nothing pending at the last look and the same schedstat: the process
    did not run, so no signal woke it (status is not parsed)."""
    d = fake_proc(tmp_path, 7)
    w = SignalWatch(str(tmp_path))
    assert w.pending(7) is False
    fake_proc(tmp_path, 7, shd=1 << (signal.SIGINT - 1))       # (as if sent without a wake-up)
    assert w.pending(7) is False                                 # not looked at
    (d / "schedstat").write_bytes(b"130 20 2\n")                 # it ran: woken by the signal
    assert w.pending(7) is True
    assert w.pending(7) is True                                  # (no clean state kept)
    w.keep_only(())
    assert not w.held and not w.clean


def test_without_schedstat_every_check_reads_status(tmp_path):
    fake_proc(tmp_path, 7, schedstat=None)
    w = SignalWatch(str(tmp_path))
    assert w.pending(7) is False
    fake_proc(tmp_path, 7, schedstat=None, pnd=1 << (signal.SIGTERM - 1))
    assert w.pending(7) is True


def test_a_real_process_woken_by_a_signal_is_seen():
    """A real process: clean while it sleeps, looked at again once it ran
    (stopped and continued), interrupted once it is gone."""
    p = subprocess.Popen(["sleep", "30"])
    try:
        time.sleep(0.1)
        w = SignalWatch()
        assert w.pending(p.pid) is False
        assert w.pending(p.pid) is False and p.pid in w.clean
        before = w.clean[p.pid]
        os.kill(p.pid, signal.SIGSTOP)          # pending until it runs; it runs and stops
        time.sleep(0.1)
        os.kill(p.pid, signal.SIGCONT)
        time.sleep(0.1)
        assert w._schedstat(p.pid) != before     # it ran: the gate opens ...
        assert w.pending(p.pid) is False         # ... and finds nothing pending
        assert w.clean[p.pid] != before
        p.kill()
        p.wait()
        assert w.pending(p.pid) is True          # gone
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        w.keep_only(())


def test_zero_schedstat_says_nothing_so_every_check_reads_status(tmp_path):
    """sched_info off: schedstat stays "0 0 0" while the process runs, so it
    cannot gate the status read."""
    fake_proc(tmp_path, 7, schedstat=b"0 0 0\n")
    w = SignalWatch(str(tmp_path))
    assert w.pending(7) is False and 7 not in w.clean
    fake_proc(tmp_path, 7, schedstat=b"0 0 0\n", pnd=1 << (signal.SIGTERM - 1))
    assert w.pending(7) is True
