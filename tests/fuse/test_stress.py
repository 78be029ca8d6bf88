"""Short fuzz and concurrency runs (``make stress`` runs the long ones)."""

from __future__ import annotations

import os


import mountlib
from fakefs import stress

pytestmark = mountlib.requires_fuse

FUZZ_SECONDS = float(os.environ.get("FAKEFS_FUZZ_SECONDS", "30"))
SHELL_SECONDS = float(os.environ.get("FAKEFS_SHELL_SECONDS", "15"))
SEED = int(os.environ.get("FAKEFS_FUZZ_SEED", "1"))


def check_health(mnt, log):
    assert stress.mount_alive(mnt) is None
    assert stress.log_problems(log) == []


def test_fuzz_every_writable_file():
    with stress.stress_mount() as (mnt, log):
        files = stress.writable_files(mnt)
        # the categories the fuzzing must reach
        joined = "\n".join(files)
        for want in ("sys/kernel/tracing/options/stacktrace", "sys/kernel/tracing/per_cpu/cpu0/",
                     "proc/sys/", "sys/kernel/tracing/current_tracer",
                     "sys/kernel/tracing/events/enable"):
            assert want in joined, want
        assert "sys/kernel/tracing/options/markers" not in files      # kept on
        rep = stress.fuzz(mnt, FUZZ_SECONDS, seed=SEED, per_writer=6)
        print(rep.summary())
        assert rep.writes > 1000 and rep.mkdirs > 50
        assert not rep.stuck, rep.stuck
        assert not rep.bad, rep.bad[:10]
        # markers stayed on: trace_marker still works after the fuzzing
        with open(os.path.join(mnt, stress.TRACING, "options/markers")) as fh:
            assert fh.read() == "1\n"
        check_health(mnt, log)


def test_fuzz_reaches_instance_files():
    with stress.stress_mount() as (mnt, log):
        os.mkdir(os.path.join(mnt, stress.TRACING, "instances/fuzz_a"))
        try:
            files = stress.writable_files(mnt)
        finally:
            os.rmdir(os.path.join(mnt, stress.TRACING, "instances/fuzz_a"))
        assert any(f.startswith(f"{stress.TRACING}/instances/fuzz_a/options/") for f in files)
        assert "dev/kmsg" in files or os.geteuid() != 0
        check_health(mnt, log)


def test_fuzz_property_detects_eio():
    """The property is checked: EIO and ENOTCONN are bad, kernel errnos are not."""
    assert stress._is_bad("EIO") and stress._is_bad("ENOTCONN")
    assert not stress._is_bad("EINVAL") and not stress._is_bad("ok")


def test_fifty_concurrent_shells():
    with stress.stress_mount() as (mnt, log):
        rep = stress.run_shells(mnt, 50, SHELL_SECONDS)
        print(stress.latency_table(stress.ShellReport(1, 0, {}), rep))
        assert rep.stuck == 0
        assert rep.failures == []
        assert all(len(v) >= 50 for v in rep.lat.values()), {k: len(v) for k, v in rep.lat.items()}
        left = os.listdir(os.path.join(mnt, stress.TRACING, "instances"))
        assert left == []
        check_health(mnt, log)


def test_a_terminated_stress_run_unmounts():
    """``timeout`` sends SIGTERM: the run stops its shells, unmounts its
    filesystem and its daemon goes (one killed so stayed mounted and busy
    for an hour)."""
    import signal
    import subprocess
    import sys
    import time
    before = _stress_mounts()
    p = subprocess.Popen([sys.executable, "-m", "fakefs.stress", "--shells", "1", "--idle-seconds",
                          "30", "--shell-seconds", "1", "--fuzz-seconds", "1"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(300):
            if _stress_mounts() - before:
                break
            time.sleep(0.1)
        new = _stress_mounts() - before
        assert new
        time.sleep(1)
        p.send_signal(signal.SIGTERM)
        assert p.wait(timeout=30) == 128 + signal.SIGTERM
        for _ in range(100):
            if not (_stress_mounts() & new or _daemons(new)):
                break
            time.sleep(0.1)
        assert not _stress_mounts() & new and not _daemons(new)
    finally:
        if p.poll() is None:
            p.kill()
        for mnt in _stress_mounts() - before:        # what a failed run left
            subprocess.run(["fusermount3", "-u", "-z", mnt], stderr=subprocess.DEVNULL)


def _stress_mounts():
    with open("/proc/self/mounts") as fh:
        return {ln.split()[1] for ln in fh if "fakefs-stress-mnt-" in ln.split()[1]}


def _daemons(mounts):
    """Pids of processes whose command line names one of ``mounts``."""
    out = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                args = fh.read().split(b"\0")
        except OSError:
            continue
        if any(os.fsencode(m) in args for m in mounts):
            out.append(int(pid))
    return out
