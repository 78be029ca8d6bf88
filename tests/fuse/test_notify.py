"""What a request changed in the tree is told to the kernel before it is answered."""

import pyfuse3
import pytest

from fakefs.fuse import notify
from fakefs.kernel.fs.pseudo import FileOperations, PseudoTree


@pytest.fixture
def told(monkeypatch):
    out = {"attrs": [], "entries": [], "async": []}
    monkeypatch.setattr(pyfuse3, "invalidate_inode",
                        lambda ino, attr_only=False: out["attrs"].append((ino, attr_only)))
    monkeypatch.setattr(pyfuse3, "invalidate_entry",
                        lambda parent, name, deleted=0: out["entries"].append((parent, name, deleted)))
    monkeypatch.setattr(pyfuse3, "invalidate_entry_async",
                        lambda parent, name, deleted=0, ignore_enoent=False:
                        out["async"].append((parent, name, deleted)))
    return out


def _tree():
    t = PseudoTree()
    d = t.create_dir("events", t.root)
    return t, d


async def test_a_requests_changes_are_told_once_each_when_it_ends(told):
    t, d = _tree()
    async with notify.request_scope():
        sub = t.create_dir("kprobes", d)
        f = t.create_file("enable", 0o644, sub, None, FileOperations())
        notify.tree_changed(d, "kprobes", sub, True)
        notify.tree_changed(sub, "enable", f, True)
        notify.tree_changed(sub, "enable", f, False)
        notify.tree_changed(d, "kprobes", sub, False)
        assert told == {"attrs": [], "entries": [], "async": []}     # not before the end
    assert sorted(told["attrs"]) == sorted([(d.ino, True), (sub.ino, True)])
    # a file's deletion names its inode; a directory's is a plain invalidation
    assert told["entries"] == [(sub.ino, b"enable", f.ino), (d.ino, b"kprobes", 0)]
    assert told["async"] == []


def test_outside_a_request_changes_are_told_at_once(told):
    t, d = _tree()
    f = t.create_file("x", 0o444, d, None, FileOperations())
    notify.tree_changed(d, "x", f, False)
    assert told["attrs"] == [(d.ino, True)] and told["async"] == [(d.ino, b"x", f.ino)]


def test_attrs_below_names_every_node_under_the_directory(told):
    t, d = _tree()
    sub = t.create_dir("sched", d)
    f = t.create_file("enable", 0o644, sub, None, FileOperations())
    notify.attrs_below(d)
    assert sorted(ino for ino, _ in told["attrs"]) == sorted([sub.ino, f.ino])
