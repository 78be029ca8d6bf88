"""The host's entries beside the tree's, as links (fakefs/fuse/hostlinks.py):
what ``fakefs sandbox`` makes COMMAND's /proc of."""

from __future__ import annotations

import os
import stat
import subprocess
import threading

from mountlib import mounted, requires_fuse

from fakefs.fuse.hostlinks import LINK_INO_BASE, HostLinks
from fakefs.kernel.fs.pseudo import FileOperations, PseudoTree


def _tree():
    t = PseudoTree()
    proc = t.makedirs("proc")
    t.create_file("allocinfo", 0o400, proc, None, FileOperations())
    vm = t.makedirs("proc/sys/vm")
    t.create_file("mem_profiling", 0o644, vm, None, FileOperations())
    t.makedirs("sys/kernel")
    return t


def _host(tmp_path):
    host = tmp_path / "host"
    (host / "sys" / "vm").mkdir(parents=True)
    for p in ("allocinfo", "meminfo", "sys/vm/swappiness", "sys/vm/mem_profiling"):
        (host / p).write_text("host\n")
    (host / "42").mkdir()
    return host


def test_the_hosts_entries_the_tree_lacks_are_links_under_the_prefix(tmp_path):
    t, host = _tree(), _host(tmp_path)
    links = HostLinks("proc", "/run/hp", str(host))
    proc = t.root.walk("proc")
    names = sorted(ln.name for ln in links.entries(proc))
    assert names == ["42", "meminfo"]                 # allocinfo, sys: the tree's own
    vm = t.root.walk("proc/sys/vm")
    (swap,) = links.entries(vm)
    assert (swap.name, swap.target) == ("swappiness", "/run/hp/sys/vm/swappiness")
    assert stat.S_ISLNK(swap.mode) and swap.ino >= LINK_INO_BASE
    assert links.node(swap.ino) is swap
    assert links.lookup(vm, "swappiness") is swap      # one inode per entry
    assert links.lookup(vm, "nonexistent") is None
    # outside the mirrored directory: nothing of the host's
    assert links.entries(t.root.walk("sys/kernel")) == []
    assert links.entries(t.root) == []
    assert links.lookup(t.root, "meminfo") is None


def test_an_entry_the_host_no_longer_has_goes(tmp_path):
    t, host = _tree(), _host(tmp_path)
    links = HostLinks("proc", "/run/hp", str(host))
    proc = t.root.walk("proc")
    gone = links.lookup(proc, "42")
    assert gone is not None
    os.rmdir(host / "42")
    assert links.lookup(proc, "42") is None
    assert links.node(gone.ino) is None
    (host / "43").mkdir()
    first = links.lookup(proc, "43")
    os.rmdir(host / "43")
    assert [ln.name for ln in links.entries(proc)] == ["meminfo"]
    assert links.node(first.ino) is None            # a readdir drops it too
    assert len(links.by_ino) == sum(map(len, links.dirs.values())) == 1


def test_self_reads_as_the_readers_pid(tmp_path):
    t = _tree()
    links = HostLinks("proc", "/run/hp", "/proc")
    proc = t.root.walk("proc")
    me = links.lookup(proc, "self")
    assert links.readlink(me, os.getpid()) == str(os.getpid())
    got = {}

    def thread():
        tid = threading.get_native_id()
        got["self"] = links.readlink(me, tid)
        got["thread-self"] = links.readlink(links.lookup(proc, "thread-self"), tid)
        got["tid"] = tid
    th = threading.Thread(target=thread)
    th.start()
    th.join()
    assert got["self"] == str(os.getpid())
    assert got["thread-self"] == "%d/task/%d" % (os.getpid(), got["tid"])
    # no such thread: the link into the host's procfs
    assert links.readlink(me, 2**22 + 1) == "/run/hp/self"
    assert links.readlink(links.lookup(proc, "meminfo"), os.getpid()) == "/run/hp/meminfo"


@requires_fuse
def test_through_a_mount_proc_is_the_fakes_with_the_hosts_as_links():
    with mounted("profile=2", extra_args=["--proc-links", "/run/fakefs-hp"]) as mnt:
        proc = os.path.join(mnt, "proc")
        names = os.listdir(proc)
        assert "profile" in names and "allocinfo" in names and "meminfo" in names
        assert str(os.getpid()) in names
        assert stat.S_ISREG(os.lstat(os.path.join(proc, "profile")).st_mode)
        assert os.readlink(os.path.join(proc, "meminfo")) == "/run/fakefs-hp/meminfo"
        assert os.readlink(os.path.join(proc, "sys/vm/swappiness")) == \
            "/run/fakefs-hp/sys/vm/swappiness"
        assert not os.path.islink(os.path.join(proc, "sys/vm/mem_profiling"))
        assert os.readlink(os.path.join(proc, "self")) == str(os.getpid())
        child = subprocess.run(["readlink", os.path.join(proc, "self")],
                               stdout=subprocess.PIPE, text=True)
        assert child.stdout.strip() not in ("", str(os.getpid()))
        # a process started after the first listing is there
        p = subprocess.Popen(["sleep", "30"])
        try:
            assert os.readlink(os.path.join(proc, str(p.pid))) == "/run/fakefs-hp/%d" % p.pid
        finally:
            p.kill()
            p.wait()
        # links cannot be changed
        try:
            os.lchown(os.path.join(proc, "meminfo"), 1000, -1)
            changed = True
        except OSError:
            changed = False
        assert not changed
    # without the option: the tree's own entries only
    with mounted() as mnt:
        assert "meminfo" not in os.listdir(os.path.join(mnt, "proc"))
