"""Short fuzz and concurrency runs (``make stress`` runs the long ones)."""

from __future__ import annotations

import os
import time

import pytest

import mountlib
from fakefs import stress

pytestmark = mountlib.requires_fuse

FUZZ_SECONDS = float(os.environ.get("FAKEFS_FUZZ_SECONDS", "30"))
SHELL_SECONDS = float(os.environ.get("FAKEFS_SHELL_SECONDS", "15"))
SEED = int(os.environ.get("FAKEFS_FUZZ_SEED", "1"))


def switch_id_collision() -> bool:
    """The known kernel-model bug (trace_activity.py): an unrecorded context
    switch is queued with occurrence id -1, which is also MACHINE, so
    _replay() hands SWITCH to _machine_hit() and catch_up raises TypeError
    for ever after (every request: EIO).  Triggered by enabling a sched
    event other than sched_switch."""
    from fakefs.kernel.fs.pseudo import File
    from fakefs.kernel.init import Kernel
    k = Kernel(host_kallsyms=False).boot()
    node = k.tree.root.walk("sys/kernel/tracing/events/sched/sched_waking/enable")
    node.fops.write(File(node, os.O_WRONLY), b"1")
    time.sleep(0.05)
    try:
        k.run_until_now()
    except TypeError:
        return True
    return False


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
        if rep.bad and switch_id_collision():
            pytest.xfail("kernel model bug (trace_activity.py SWITCH/MACHINE id -1) makes "
                         f"catch_up raise: {len(rep.bad)} EIO, e.g. {rep.bad[0]}")
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
