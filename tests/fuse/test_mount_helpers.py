"""Unit tests of the mount helpers: options, ownership map, /proc lookups, messages."""

from __future__ import annotations

import os
import stat

import pytest

from fakefs.fuse import mountpoint, procfd
from fakefs.fuse.ownership import Ownership, OwnershipError, parse_tracefs_options
from fakefs.kernel.fs.pseudo import PseudoTree


def test_tracefs_options_are_split_from_fuse_options():
    rest, found = parse_tracefs_options(["allow_other", "uid=5", "gid=6", "mode=0755", "fsname=x"])
    assert rest == ["allow_other", "fsname=x"]
    assert found == {"uid": 5, "gid": 6, "mode": 0o755}
    for bad in ("uid=", "uid=x", "mode=9", "gid=-1", "mode"):
        with pytest.raises(OwnershipError):
            parse_tracefs_options([bad])


def tree():
    t = PseudoTree()
    tracing = t.makedirs("sys/kernel/tracing", 0o700)
    on = t.create_file("tracing_on", 0o640, tracing, None, None)
    inst = t.create_dir("instances", tracing)
    foo = t.create_dir("foo", inst)
    foo_on = t.create_file("tracing_on", 0o640, foo, None, None)
    proc = t.create_dir("proc", t.root)
    return t, tracing, on, foo, foo_on, proc


def test_owner_map_and_tracefs_inheritance():
    t, tracing, on, foo, foo_on, proc = tree()
    own = Ownership(1000, 100, tracefs_root=tracing, tracefs_opts={"uid": 7, "mode": 0o755})
    assert stat.S_IMODE(tracing.mode) == 0o755 and stat.S_ISDIR(tracing.mode)
    assert own.uid_of(proc) == 1000 and own.gid_of(proc) == 100        # machine root = owner
    assert own.uid_of(t.root.walk("sys")) == 1000
    assert own.uid_of(tracing) == 7 and own.uid_of(on) == 7 and own.uid_of(foo_on) == 7
    assert own.gid_of(on) == 100
    own.chown(foo, 9, None)
    assert own.is_anchor(foo) and own.is_anchor(tracing) and not own.is_anchor(on)
    assert own.uid_of(foo_on) == 9 and own.uid_of(on) == 7
    own.chown(tracing, 1000, 55)                    # back to the owner: stored as root
    assert tracing.uid == 0 and own.uid_of(on) == 1000 and own.gid_of(foo_on) == 55
    own.chown(on, 3, None)
    assert own.uid_of(on) == 3
    own.forget(on.ino)
    assert own.uid_of(on) == 1000


def test_callers_as_the_kernel_sees_them():
    own = Ownership(1000, 100)
    assert own.sim_uid(1000) == 0 and own.sim_uid(0) == 0 and own.sim_uid(1001) == 1001
    root_own = Ownership(0, 0)
    assert root_own.sim_uid(0) == 0 and root_own.sim_uid(1000) == 1000
    assert root_own.host_uid(0) == 0


def test_fd_flags_sees_fcntl_changes(tmp_path):
    p = tmp_path / "f"
    p.write_text("x")
    ino = os.stat(p).st_ino
    fd = os.open(p, os.O_RDONLY)
    try:
        assert procfd.current_nonblock(os.getpid(), ino, None, 0) is False
        os.set_blocking(fd, False)
        assert procfd.current_nonblock(os.getpid(), ino, None, 0) is True
        # disagreeing descriptors: the flags seen at open decide
        fd2 = os.open(p, os.O_RDONLY)
        assert procfd.current_nonblock(os.getpid(), ino, None, 0) is False
        assert procfd.current_nonblock(os.getpid(), ino, None, os.O_NONBLOCK) is True
        os.close(fd2)
    finally:
        os.close(fd)
    # a process that is gone: the open flags
    assert procfd.current_nonblock(2**22 + 1, ino, None, os.O_NONBLOCK) is True


def test_mountinfo_parsing(tmp_path):
    mi = tmp_path / "mountinfo"
    mi.write_text(
        "22 1 0:21 / /proc rw,nosuid - proc proc rw\n"
        "40 22 0:45 / /tmp/a\\040b rw - fuse.fakefs fakefs rw,user_id=0\n"
        "41 22 0:46 / /tmp/a\\040b rw - fuse.fakefs fakefs rw,user_id=0\n")
    assert procfd.mount_dev("/tmp/a b", str(mi)) == "0:46"
    assert procfd.dev_attached("0:45", str(mi)) and not procfd.dev_attached("0:99", str(mi))
    assert mountpoint.mounts_at("/tmp/a b", str(mi)) == [("fuse.fakefs", "fakefs")] * 2
    assert mountpoint.enclosing_mount("/tmp/a b/proc/x", str(mi)) == ("/tmp/a b", "fuse.fakefs")


def test_messages_say_what_to_do(tmp_path):
    msg = mountpoint.fuse_device_problem(str(tmp_path / "nodev"))
    assert "does not exist" in msg and "modprobe fuse" in msg
    assert "chmod 0666" in (mountpoint.explain_failure(
        "fusermount3: failed to open /dev/fuse: Permission denied") or "chmod 0666")
    assert "user_allow_other" in mountpoint.explain_failure(
        "fusermount3: option allow_other only allowed if 'user_allow_other' is set")
    with pytest.raises(mountpoint.MountpointError, match="not a directory"):
        f = tmp_path / "file"
        f.write_text("")
        mountpoint.prepare(str(f))
    with pytest.raises(mountpoint.MountpointError, match="No such file"):
        mountpoint.prepare(str(tmp_path / "missing"))
