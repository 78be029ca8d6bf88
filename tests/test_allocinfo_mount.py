"""/proc/allocinfo and /proc/sys/vm/mem_profiling through a real mount, from the shell."""

import errno
import os
import re
import subprocess
import sys
import time

import pytest

from mountlib import REPO, mounted, requires_fuse

pytestmark = requires_fuse

ROW = re.compile(r"^ *-?\d+ +\d+ \S+:\d+ (\[\w+\] )?func:\S+ $")


def sh(cmd, cwd):
    return subprocess.run(["bash", "-c", cmd], cwd=cwd, capture_output=True, text=True, timeout=60)


def dmesg(mnt):
    env = dict(os.environ, PYTHONPATH=REPO)
    return subprocess.run([sys.executable, "-m", "fakefs", "dmesg", mnt], capture_output=True,
                          text=True, timeout=60, env=env).stdout


@pytest.fixture(scope="module")
def mnt():
    with mounted(seed=5) as m:
        yield m


def test_files_and_modes(mnt):
    r = sh("stat -c '%a %s %u' proc/allocinfo proc/sys/vm/mem_profiling", mnt)
    me = os.getuid()                  # the mounting user is the machine's root
    assert r.stdout.split("\n")[:2] == [f"400 0 {me}", f"644 0 {me}"]


def test_cat_allocinfo_format(mnt):
    r = sh("cat proc/allocinfo", mnt)
    assert r.returncode == 0
    lines = r.stdout.split("\n")
    assert lines[0] == "allocinfo - version: 1.0"
    assert lines[1] == "#     <size>  <calls> <tag info>"
    rows = [line for line in lines[2:] if line]
    assert len(rows) > 3000 and all(ROW.match(line) for line in rows)
    assert "     4136960     1010 drivers/staging/ctagmod/ctagmod.c:20 [ctagmod] func:ctagmod_start " in rows
    assert sh("grep -c ' $' proc/allocinfo", mnt).stdout.strip() == str(len(rows))


def test_sort_numfmt_pipeline(mnt):
    r = sh("sort -g proc/allocinfo | tail | numfmt --to=iec", mnt)
    assert r.returncode == 0, r.stderr
    out = r.stdout.rstrip("\n").split("\n")
    assert len(out) == 10
    assert all(re.match(r"^ +[0-9.]+[KMG]? +\d+ \S+:\d+ (\[\w+\] )?func:\S+ $", line) for line in out)
    assert re.match(r"^ +\d+M +\d+ mm/page_ext\.c:271 func:alloc_page_ext $", out[-1])
    assert any("func:alloc_slab_page" in line for line in out)
    assert out[-1][11] == "M" and out[-1][12] == " "          # the 12-wide column survives numfmt


def test_toggle_freezes_and_resumes(mnt):
    sysctl = "proc/sys/vm/mem_profiling"
    assert sh("cat " + sysctl, mnt).stdout == "1\n"
    r = sh("echo 0 > " + sysctl, mnt)
    assert r.returncode == 0, r.stderr
    assert sh("cat " + sysctl, mnt).stdout == "0\n"
    a = sh("cat proc/allocinfo", mnt).stdout
    time.sleep(1.2)
    b = sh("cat proc/allocinfo", mnt).stdout
    assert a == b
    assert sh("echo 1 > " + sysctl, mnt).returncode == 0
    time.sleep(1.2)
    assert sh("cat proc/allocinfo", mnt).stdout != b


def test_write_errors(mnt):
    r = sh("echo 2 > proc/sys/vm/mem_profiling", mnt)
    assert r.returncode != 0 and "Invalid argument" in r.stderr
    r = sh("echo on > proc/sys/vm/mem_profiling", mnt)
    assert r.returncode != 0 and "Invalid argument" in r.stderr
    r = sh("echo 1 > proc/allocinfo", mnt)
    # root passes the 0400 mode (CAP_DAC_OVERRIDE) and gets pde_write's EIO;
    # a non-root owner is stopped by the mode
    err = "Input/output error" if os.geteuid() == 0 else "Permission denied"
    assert r.returncode != 0 and err in r.stderr
    assert sh("echo ' 1 ' > proc/sys/vm/mem_profiling && cat proc/sys/vm/mem_profiling", mnt).stdout == "1\n"
    assert sh("dd if=proc/sys/vm/mem_profiling bs=1 status=none", mnt).stdout == "1"


def test_never_from_the_command_line():
    with mounted(cmdline="sysctl.vm.mem_profiling=never") as m:
        assert sh("stat -c %a proc/sys/vm/mem_profiling", m).stdout == "444\n"
        r = sh("echo 1 > proc/sys/vm/mem_profiling", m)
        assert r.returncode != 0 and "Permission denied" in r.stderr
        r = sh("tail -n +3 proc/allocinfo | awk '$1 != 0 || $2 != 0' | wc -l", m)
        assert r.stdout.strip() == "0"
        assert "Failed to set sysctl parameter 'vm.mem_profiling=never': permission denied (read-only?)" \
            in dmesg(m)


def test_newer_kernel_persona():
    with mounted(persona="6.18") as m:
        assert sh("head -1 proc/allocinfo", m).stdout == "allocinfo - version: 2.0\n"
    with mounted(persona="6.18", cmdline="sysctl.vm.mem_profiling=never") as m:
        assert not os.path.exists(os.path.join(m, "proc/allocinfo"))
        assert "Memory allocation profiling is disabled!" in dmesg(m)


def test_debug_build_is_read_only():
    with mounted(opts="CONFIG_MEM_ALLOC_PROFILING_DEBUG=y") as m:
        assert sh("stat -c %a proc/sys/vm/mem_profiling", m).stdout == "444\n"
        assert sh("cat proc/sys/vm/mem_profiling", m).stdout == "1\n"
        r = sh("echo 0 > proc/sys/vm/mem_profiling", m)
        assert r.returncode != 0 and "Permission denied" in r.stderr



@requires_fuse
def test_sysctl_refuses_chmod_tracefs_allows_it():
    with mounted() as mnt:
        with pytest.raises(PermissionError) as e:
            os.chmod(os.path.join(mnt, "proc/sys/vm/mem_profiling"), 0o600)
        assert e.value.errno == errno.EPERM
        os.chmod(os.path.join(mnt, "sys/kernel/tracing/trace"), 0o600)
        assert os.stat(os.path.join(mnt, "sys/kernel/tracing/trace")).st_mode & 0o777 == 0o600
