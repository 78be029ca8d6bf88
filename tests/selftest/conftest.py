"""Fixtures of the selftest harness's tests: a fake kernel tree, extra tests,
a work tree."""

from __future__ import annotations

from pathlib import Path

import pytest
from selftest_helpers import FUNCTIONS, make_tc, write

from fakefs.selftest import fetch, worktree


@pytest.fixture
def ksrc(tmp_path) -> Path:
    """A fake kernel tree with a minimal ftrace selftest directory."""
    root = tmp_path / "linux-9.9"
    ft = root / fetch.FTRACE_REL
    write(ft / "ftracetest", "#!/bin/sh\necho fake ftracetest\n", 0o755)
    write(ft / "test.d" / "functions", FUNCTIONS)
    write(ft / "test.d" / "00basic" / "a.tc", make_tc("basic a"))
    write(ft / "test.d" / "00basic" / "b.tc", make_tc("basic b", flags="instance"))
    write(ft / "test.d" / "ftrace" / "c.tc", make_tc("ftrace c"))
    write(ft / "logs" / "old.log", "stale\n")
    return root


@pytest.fixture
def extra(tmp_path) -> Path:
    d = tmp_path / "mytests"
    write(d / "one.tc", make_tc("extra one"), 0o444)
    write(d / "sub" / "two.tc", make_tc("extra two", flags="instance"), 0o444)
    write(d / "helper.py", "print('not a test')\n")
    return d


@pytest.fixture
def tree(ksrc, tmp_path) -> worktree.WorkTree:
    work = tmp_path / "work"
    work.mkdir()
    return worktree.make_work_tree(ksrc / fetch.FTRACE_REL, work)
