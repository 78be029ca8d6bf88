"""The work tree and the test selection (fakefs/selftest/worktree.py)."""

from __future__ import annotations

import os

import pytest
from selftest_helpers import make_tc, write

from fakefs.selftest import fetch, worktree
from fakefs.selftest.errors import SelftestError

def test_work_tree_copy(tree):
    assert fetch.is_ftrace_dir(tree.ftrace)
    assert os.access(tree.ftrace / "ftracetest", os.X_OK)
    assert not (tree.ftrace / "logs").exists()


def test_add_extra_copies_unchanged(tree, extra):
    name = worktree.add_extra(tree, extra)
    assert name == "mytests"
    for rel in ("one.tc", "sub/two.tc", "helper.py"):
        assert (tree.test_d / name / rel).read_bytes() == (extra / rel).read_bytes()
    assert (extra / "one.tc").stat().st_mode & 0o777 == 0o444    # source untouched
    assert worktree.add_extra(tree, extra) == name                      # idempotent


def test_add_extra_name_collision(tree, tmp_path):
    d = tmp_path / "x" / "ftrace"                                 # same name as test.d/ftrace
    write(d / "mine.tc", make_tc("mine"))
    name = worktree.add_extra(tree, d)
    assert name == "ftrace-2"
    assert (tree.test_d / "ftrace" / "c.tc").is_file()           # upstream dir untouched
    assert not (tree.test_d / "ftrace" / "mine.tc").exists()


def test_add_extra_errors(tree, tmp_path):
    with pytest.raises(SelftestError):
        worktree.add_extra(tree, tmp_path / "missing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(SelftestError):
        worktree.add_extra(tree, tmp_path / "empty")


def rels(tree, tests):
    return [tree.rel(t) for t in tests]


def test_select_default(tree, extra):
    assert rels(tree, worktree.select_tests(tree, [])) == [
        "00basic/a.tc", "00basic/b.tc", "ftrace/c.tc"]
    worktree.add_extra(tree, extra)
    assert rels(tree, worktree.select_tests(tree, [])) == ["mytests/one.tc", "mytests/sub/two.tc"]


def test_select_specs(tree, extra, tmp_path):
    worktree.add_extra(tree, extra)
    sel = lambda *specs: rels(tree, worktree.select_tests(tree, list(specs), cwd=tmp_path))
    assert sel("00basic/a.tc") == ["00basic/a.tc"]
    assert sel("00basic") == ["00basic/a.tc", "00basic/b.tc"]
    assert sel("00basic/") == ["00basic/a.tc", "00basic/b.tc"]
    assert sel("one.tc") == ["mytests/one.tc"]                    # relative to the extra dir
    assert sel("sub") == ["mytests/sub/two.tc"]
    assert sel("mytests") == ["mytests/one.tc", "mytests/sub/two.tc"]
    assert sel("00basic/*.tc") == ["00basic/a.tc", "00basic/b.tc"]
    assert sel("*/c.tc") == ["ftrace/c.tc"]
    assert sel("sub/*") == ["mytests/sub/two.tc"]                 # glob within an extra
    assert sel("ftrace/c.tc", "00basic", "ftrace/c.tc") == [
        "ftrace/c.tc", "00basic/a.tc", "00basic/b.tc"]            # order kept, no duplicates
    assert len(sel("all")) == 5
    # an existing file of an --extra dir maps to its copy
    assert sel(str(extra / "one.tc")) == ["mytests/one.tc"]
    with pytest.raises(SelftestError):
        sel("nosuch.tc")
    with pytest.raises(SelftestError):
        sel("../../etc")


def test_select_outside_paths(tree, tmp_path):
    lone = write(tmp_path / "elsewhere" / "lone.tc", make_tc("lone"))
    assert rels(tree, worktree.select_tests(tree, [str(lone)])) == ["cmdline/lone.tc"]
    assert (tree.test_d / "cmdline" / "lone.tc").read_bytes() == lone.read_bytes()
    d = tmp_path / "moretests"
    write(d / "m.tc", make_tc("m"))
    # a directory given relative to the current directory becomes an extra
    assert rels(tree, worktree.select_tests(tree, ["moretests"], cwd=tmp_path)) == ["moretests/m.tc"]
    assert "moretests" in tree.extras


def test_expected_cases(tree, extra):
    worktree.add_extra(tree, extra)
    tests = worktree.select_tests(tree, ["00basic", "mytests"])
    assert worktree.expected_cases(tree, tests) == [
        (1, "00basic/a.tc", False), (2, "00basic/b.tc", False),
        (3, "mytests/one.tc", False), (4, "mytests/sub/two.tc", False),
        (5, "00basic/b.tc", True), (6, "mytests/sub/two.tc", True)]


def test_mark_unsupported_says_why_and_keeps_the_head(tree):
    """The echo and exit go right after the leading comments (a comment
    further down stays where it is); a reason with a quote is quoted."""
    tests = worktree.select_tests(tree, [])
    target = next(t for t in tests if tree.rel(t) == "00basic/a.tc")
    target.write_text(target.read_text() + "# a comment in the body\necho done\n")
    before = target.read_text().splitlines(keepends=True)
    n = next(i for i, ln in enumerate(before) if not ln.startswith("#"))
    marked = worktree.mark_unsupported(tree, tests, {"00basic/a.tc": "the shell's own call"})
    assert marked == ["00basic/a.tc"]
    after = target.read_text().splitlines(keepends=True)
    assert after[:n] == before[:n]
    assert after[n:n + 2] == ["echo 'fakefs: the shell'\"'\"'s own call'\n", "exit_unsupported\n"]
    assert after[n + 2:] == before[n:]
    other = next(t for t in tests if tree.rel(t) == "00basic/b.tc")
    assert "exit_unsupported" not in other.read_text()


def test_never_reaches_mount_names_tests_with_reasons():
    for rel, why in worktree.NEVER_REACHES_MOUNT.items():
        assert rel.endswith(".tc") and "mount" in why


def test_the_tests_marked_unsupported_are_said_in_why_toml():
    import tomllib
    why = tomllib.loads((worktree.Path(worktree.__file__).parent / "why.toml").read_text())["why"]
    for rel in worktree.NEVER_REACHES_MOUNT:
        assert rel in why and "harness" in why[rel]