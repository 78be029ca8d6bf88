"""Files named by a writer, looked up in its view (fuse/callerpath.py)."""

import errno
import os

import pytest

from fakefs import sim
from fakefs.fuse.callerpath import CallerFiles
from fakefs.kernel.fs.pseudo import KernelError
from fakefs.sim.clock import ManualClock


@pytest.fixture(scope="module")
def tree():
    return sim.boot(seed=1, nr_cpus=2, clock=ManualClock(), host_kallsyms=False).tree


def _errno(fn, *a):
    with pytest.raises(KernelError) as e:
        fn(*a)
    return e.value.errno


def test_links_are_followed_in_the_writers_root(tmp_path, tree):
    (tmp_path / "bin").mkdir()
    prog = tmp_path / "bin" / "prog"
    prog.write_bytes(b"\x7fELF" + bytes(60))
    os.symlink("prog", tmp_path / "bin" / "rel")                   # relative target
    os.symlink(str(tmp_path / "bin"), tmp_path / "abs")            # absolute target
    cf = CallerFiles(tree, None)
    pid = os.getpid()
    for path in (prog, tmp_path / "bin" / "rel", tmp_path / "abs" / "rel",
                 tmp_path / "abs" / ".." / "bin" / "prog"):
        f = cf.open(pid, str(path))
        assert (f.dev, f.ino) == (os.stat(prog).st_dev, os.stat(prog).st_ino), path
        assert f.regular and f.readable and os.pread(f.fd, 4, 0) == b"\x7fELF"
        f.close()
    d = cf.open(pid, str(tmp_path))
    assert not d.regular and d.fd is None


def test_a_relative_path_starts_at_the_writers_working_directory(tmp_path, tree, monkeypatch):
    (tmp_path / "prog").write_bytes(b"x")
    monkeypatch.chdir(tmp_path)
    f = CallerFiles(tree, None).open(os.getpid(), "./prog")
    assert f.ino == os.stat(tmp_path / "prog").st_ino
    f.close()


def test_lookup_errors(tmp_path, tree):
    cf = CallerFiles(tree, None)
    pid = os.getpid()
    (tmp_path / "file").write_bytes(b"x")
    os.symlink("loop", tmp_path / "loop")
    assert _errno(cf.open, pid, str(tmp_path / "missing")) == errno.ENOENT
    assert _errno(cf.open, pid, str(tmp_path / "file" / "below")) == errno.ENOTDIR
    assert _errno(cf.open, pid, str(tmp_path / "loop")) == errno.ELOOP
    assert _errno(cf.open, pid, "") == errno.ENOENT


def test_our_own_mount_is_looked_up_in_the_tree(tree):
    mounts = [("/", "/"), ("/mnt/fake", "/"), ("/tracing", "/sys/kernel/tracing")]
    assert CallerFiles._inside(mounts, "/mnt/fake/sys/kernel") == "sys/kernel"
    assert CallerFiles._inside(mounts, "/tracing/README") == "sys/kernel/tracing/README"
    assert CallerFiles._inside([("/mnt/fake", "/")], "/mnt/fakeish") is None
    cf = CallerFiles(tree, "0:77")
    f = cf._tree_file("sys/kernel/tracing/README")
    assert f.regular and not f.readable and f.size == 0 and f.dev == os.makedev(0, 77)
    d = cf._tree_file("sys/kernel/tracing")
    assert not d.regular
    assert _errno(cf._tree_file, "sys/kernel/tracing/nope") == errno.ENOENT


def test_a_path_through_our_mount_never_reaches_the_host(tree, tmp_path, monkeypatch):
    mp = tmp_path / "fake"
    mp.mkdir()
    cf = CallerFiles(tree, "0:77")
    monkeypatch.setattr(cf, "_ours", lambda pid: [(str(mp), "/")])
    looked = []
    real = os.lstat
    monkeypatch.setattr(os, "lstat", lambda p: looked.append(p) or real(p))
    f = cf.open(os.getpid(), str(mp / "sys" / "kernel" / "tracing" / "README"))
    assert f.dev == os.makedev(0, 77) and not f.readable
    assert looked and not any("/fake" in p for p in looked)
