"""/proc/profile through a real mount: util-linux readprofile, the heatmap,
and the 2.6.30 EQware persona's /proc/allocinfo."""

from __future__ import annotations

import errno
import os
import shutil
import stat
import struct
import subprocess
import time

import pytest

from mountlib import mounted, requires_fuse

from fakefs.views import heatmap

pytestmark = requires_fuse

READPROFILE = shutil.which("readprofile") or "/usr/sbin/readprofile"
needs_readprofile = pytest.mark.skipif(not os.path.exists(READPROFILE),
                                       reason="util-linux readprofile not installed")


@pytest.fixture(scope="module")
def prof_mnt():
    with mounted(cmdline="profile=2") as m:
        time.sleep(1.5)                         # let the CPUs tick a little
        yield m


def readprofile(mnt, *opts):
    cmd = [READPROFILE, "-p", os.path.join(mnt, "proc/profile"),
           "-m", os.path.join(mnt, "boot/System.map"), *opts]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


def test_stat_reports_the_real_size(prof_mnt):
    path = os.path.join(prof_mnt, "proc/profile")
    st = os.stat(path)
    assert stat.S_IMODE(st.st_mode) == 0o644 and st.st_uid == os.getuid()
    assert st.st_size > 4 and st.st_size % 4 == 0
    with open(path, "rb") as f:
        assert f.seek(0, os.SEEK_END) == st.st_size
        f.seek(0)
        data = f.read()
    assert len(data) == st.st_size
    assert struct.unpack("<I", data[:4])[0] == 4            # profile=2: step 1 << 2
    with open(path, "rb") as f:
        f.seek(6)
        assert len(f.read(10)) == 10


def test_writes(prof_mnt):
    path = os.path.join(prof_mnt, "proc/profile")
    fd = os.open(path, os.O_WRONLY)
    try:
        with pytest.raises(OSError) as e:
            os.write(fd, struct.pack("<I", 20))              # a multiplier: x86 says no
        assert e.value.errno == errno.EINVAL
        assert os.write(fd, b"\0") == 1                       # what readprofile -r writes
    finally:
        os.close(fd)
    with open(path, "rb") as f:
        counts = struct.unpack("<%dI" % (os.fstat(f.fileno()).st_size // 4 - 1), f.read()[4:])
    assert sum(counts) < 200                                  # just reset


@needs_readprofile
def test_readprofile_ranks_the_hot_functions(prof_mnt):
    time.sleep(1)
    r = readprofile(prof_mnt)
    assert r.returncode == 0, r.stderr
    rows = [ln.split() for ln in r.stdout.splitlines()]
    assert rows[-1][1] == "total" and int(rows[-1][0]) > 0
    assert rows[-2][1] == "*unknown*"
    ranked = sorted((int(n), name) for n, name, *_ in rows[:-2])
    assert ranked[-1][1] == "pv_native_safe_halt"             # the idle loop's hlt
    assert len(ranked) > 5


@needs_readprofile
@pytest.mark.parametrize("opts", [["-v"], ["-a"], ["-b"], ["-s"], ["-i"], ["-v", "-a"]])
def test_readprofile_options(prof_mnt, opts):
    r = readprofile(prof_mnt, *opts)
    assert r.returncode == 0, r.stderr
    assert "Wrong map file" not in r.stderr and "wrong map line" not in r.stderr
    if opts == ["-i"]:
        assert r.stdout.startswith("Sampling_step: 4\n")
    elif "-v" in opts:
        assert r.stdout.splitlines()[-1].startswith("0000000000000000 total ")
    elif opts == ["-b"]:
        assert "\ttotal" in r.stdout or "  total\t\t\t\t" in r.stdout
    elif opts == ["-s"]:
        assert "pv_native_safe_halt+0x" in r.stdout


def test_heatmap_command(prof_mnt, capsys):
    assert heatmap.main([prof_mnt, "-n", "5"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "Kernel Heatmap (top #5)"
    assert out[1] == "         Address              Function          NR          %"
    assert out[3].split()[1] == "pv_native_safe_halt"
    assert out[-2].endswith("     100.00")


def test_no_profile_without_the_parameter():
    with mounted() as m:
        assert not os.path.exists(os.path.join(m, "proc/profile"))
        assert os.path.exists(os.path.join(m, "boot/System.map"))


def _allocinfo(m):
    with open(os.path.join(m, "proc/allocinfo")) as f:
        line = f.read()
    assert line.endswith("\n") and line.count("\n") == 1
    return [int(x) for x in line.split()]


def test_eqware_persona_allocinfo_through_the_mount():
    with mounted(cmdline="mem=48M", persona="2.6.30-eqware") as m:
        path = os.path.join(m, "proc/allocinfo")
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o444
        boot = _allocinfo(m)
        assert boot[0] > 1000 and boot[1:] == [0] * 5
        time.sleep(0.5)
        idle = _allocinfo(m)
        assert idle[1:] == [0] * 5
        assert not os.path.exists(os.path.join(m, "proc/sys/vm/mem_profiling"))
        with open(os.path.join(m, "proc/heap_stress"), "w") as f:
            f.write("stress\n")
        total = [0] * 6
        deadline = time.time() + 40
        while time.time() < deadline and not (total[2] and total[3] and total[5]):
            time.sleep(1)
            total = [a + b for a, b in zip(total, _allocinfo(m))]
        assert total[1] and total[2] and total[3] and total[5], total
        with open(os.path.join(m, "proc/heap_stress"), "w") as f:
            f.write("idle\n")
        fd = os.open(path, os.O_RDONLY)
        try:
            assert os.read(fd, 100).count(b" ") == 5
        finally:
            os.close(fd)
