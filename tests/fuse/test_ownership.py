"""Who owns the mount: the mounting user by default; tracefs's uid=, gid=, mode=;
/dev/kmsg and dmesg_restrict for other users."""

from __future__ import annotations

import errno
import os
import stat
import subprocess
import sys

import pytest

import mountlib

pytestmark = mountlib.requires_fuse

ME, MYGID = os.getuid(), os.getgid()
OTHER = 4321            # a uid that is not the mounting user


def owner(path: str) -> tuple[int, int, int]:
    st = os.stat(path)
    return st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)


def test_mounting_user_owns_the_tree(mnt):
    for rel in ("", "sys", "sys/kernel/tracing", "sys/kernel/tracing/tracing_on",
                "sys/kernel/tracing/events/sched/enable", "proc/allocinfo", "dev/kmsg"):
        uid, gid, _ = owner(os.path.join(mnt, rel))
        assert (uid, gid) == (ME, MYGID), rel
    # tracefs defaults: the root 0700, directories 0750, sys/ above it 0755
    t = os.path.join(mnt, "sys/kernel/tracing")
    assert owner(t)[2] == 0o700
    assert owner(os.path.join(mnt, "sys"))[2] == 0o755
    inst = os.path.join(t, "instances", "own")
    os.mkdir(inst)
    try:
        assert owner(inst) == (ME, MYGID, 0o750)
        with open(os.path.join(inst, "tracing_on"), "w") as fh:      # usable, not just visible
            fh.write("0")
    finally:
        os.rmdir(inst)


def test_mode_and_gid_options():
    with mountlib.mounted(opts=f"mode=0755,gid={MYGID}") as m:
        t = os.path.join(m, "sys/kernel/tracing")
        assert owner(t) == (ME, MYGID, 0o755)
        # mode applies to the tracefs root only (tracefs_apply_options)
        assert owner(os.path.join(t, "instances"))[2] == 0o750
        assert owner(os.path.join(t, "tracing_on"))[2] == 0o640
        assert owner(os.path.join(m, "proc"))[2] == 0o555


@mountlib.requires_root
def test_uid_gid_options_and_chown_inheritance():
    with mountlib.mounted(opts=f"uid={OTHER},gid={OTHER + 1}") as m:
        t = os.path.join(m, "sys/kernel/tracing")
        # every tracefs inode takes the root's owner; procfs keeps the machine's root
        for rel in ("", "tracing_on", "events/sched/enable", "instances"):
            assert owner(os.path.join(t, rel))[:2] == (OTHER, OTHER + 1), rel
        assert owner(os.path.join(m, "proc/allocinfo"))[:2] == (ME, MYGID)
        inst = os.path.join(t, "instances", "x")
        os.mkdir(inst)
        try:
            assert owner(os.path.join(inst, "trace"))[:2] == (OTHER, OTHER + 1)
            # chown of the root moves what was never chowned itself
            os.chown(os.path.join(t, "trace"), 7, 7)
            os.chown(t, 8, 8)
            assert owner(t)[:2] == (8, 8)
            assert owner(os.path.join(t, "tracing_on"))[:2] == (8, 8)
            assert owner(os.path.join(t, "trace"))[:2] == (7, 7)
            # an instance chowned: its files follow it (set_tracefs_inode_owner)
            os.chown(inst, 9, 9)
            assert owner(os.path.join(inst, "trace"))[:2] == (9, 9)
            assert owner(os.path.join(t, "tracing_on"))[:2] == (8, 8)
        finally:
            os.rmdir(inst)


def _as_uid(uid: int, code: str, mnt: str) -> subprocess.CompletedProcess:
    pre = f"import os; os.setgroups([]); os.setgid({uid}); os.setuid({uid}); M={mnt!r}\n"
    return subprocess.run([sys.executable, "-c", pre + code], capture_output=True, text=True,
                          timeout=30)


KMSG_OPEN = """
import errno
try:
    fd = os.open(M + "/dev/kmsg", os.O_RDONLY | os.O_NONBLOCK); os.read(fd, 8192); print("ok")
except OSError as e:
    print(errno.errorcode[e.errno])
"""


def test_kmsg_readable_by_the_owner(mnt):
    with open(os.path.join(mnt, "proc/sys/kernel/dmesg_restrict")) as fh:
        assert fh.read() == "1\n"                      # Debian's default
    fd = os.open(os.path.join(mnt, "dev/kmsg"), os.O_RDONLY | os.O_NONBLOCK)
    try:
        assert b"Linux version" in os.read(fd, 8192)      # one record a read
    finally:
        os.close(fd)


@mountlib.requires_root
def test_kmsg_follows_dmesg_restrict_for_others():
    with mountlib.mounted(opts="allow_other") as m:
        sysctl = os.path.join(m, "proc/sys/kernel/dmesg_restrict")
        r = _as_uid(OTHER, KMSG_OPEN, m)
        assert r.stdout.strip() == "EPERM", r.stderr
        with open(sysctl, "w") as fh:
            fh.write("0")
        r = _as_uid(OTHER, KMSG_OPEN, m)
        assert r.stdout.strip() == "ok", r.stderr
        with pytest.raises(OSError) as e:
            with open(sysctl, "w") as fh:
                fh.write("2")
        assert e.value.errno == errno.EINVAL
        with open(sysctl, "w") as fh:
            fh.write("1")
        assert _as_uid(OTHER, KMSG_OPEN, m).stdout.strip() == "EPERM"


ADDRESSES_SEEN = """
import errno
def seen(path):
    try:
        with open(path) as fh:
            lines = fh.read().splitlines()
    except OSError as e:
        return errno.errorcode[e.errno]
    return "%d lines, %d with an address" % (len(lines), sum(int(ln.split()[0], 16) != 0 for ln in lines))
for rel in ["proc/kallsyms"] + ["boot/" + n for n in sorted(os.listdir(M + "/boot"))] + [
        "sys/kernel/debug/kprobes/list", "sys/kernel/tracing/trace"]:
    print(rel.rsplit("/", 1)[-1], seen(M + "/" + rel))
"""


@mountlib.requires_root
def test_other_users_see_no_address_on_an_allow_other_mount():
    """As `nobody`: /proc/kallsyms with every address zero (kptr_restrict 0 with
    Debian's perf_event_paranoid, no CAP_SYSLOG), System.map root's only
    (EACCES), debugfs and tracefs closed (0700 roots).  The owner sees the
    addresses until kptr_restrict is 2."""
    nobody = 65534
    with mountlib.mounted(opts="allow_other") as m:
        r = _as_uid(nobody, ADDRESSES_SEEN, m)
        out = dict(ln.split(" ", 1) for ln in r.stdout.splitlines())
        assert "kallsyms" in out, r.stderr
        assert out.pop("kallsyms").endswith(" 0 with an address")
        maps = {k: v for k, v in out.items() if k.startswith("System.map")}
        assert len(maps) == 2 and set(maps.values()) == {"EACCES"}, out
        assert out["list"] == out["trace"] == "EACCES"
        with open(os.path.join(m, "proc/kallsyms")) as fh:
            mine = fh.read().splitlines()
        assert len(mine) > 1000 and all(int(ln.split()[0], 16) for ln in mine[:1000])
        sysctl = os.path.join(m, "proc/sys/kernel/kptr_restrict")
        with open(sysctl) as fh:
            assert fh.read() == "0\n"
        with open(sysctl, "w") as fh:
            fh.write("2")
        with open(os.path.join(m, "proc/kallsyms")) as fh:
            assert not any(int(ln.split()[0], 16) for ln in fh)
        with open(sysctl, "w") as fh:
            fh.write("0")
