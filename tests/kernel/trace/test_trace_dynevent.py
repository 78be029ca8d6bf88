"""trace_dynevent.py: the command-file line parser and dyn_event_release()."""

import errno

import pytest

from fakefs.kernel.fs.pseudo import KernelError
from fakefs.kernel.trace.trace_dynevent import (DynEventOps, DynEvents, parse_run_command,
                                                parse_run_steps)


def run(data):
    got = []
    n = parse_run_command(data.encode(), got.append)
    return n, got


def test_lines_and_comments():
    assert run("a b\nc # note\n\n#x\nlast") == (len("a b\nc # note\n\n#x\nlast"),
                                                ["a b", "c ", "", "", "last"])


def test_too_long_a_line():
    with pytest.raises(KernelError) as e:
        run("x" * 5000)
    assert e.value.errno == errno.EINVAL
    n, got = run("y" * 10 + "\n" + "x" * 4000 + "\n")
    assert got == ["y" * 10, "x" * 4000]


def test_first_failure_is_the_writes():
    def fn(line):
        if line == "bad":
            raise KernelError(errno.ENOENT)
        seen.append(line)
    seen = []
    with pytest.raises(KernelError):
        parse_run_command(b"ok\nbad\nnever\n", fn)
    assert seen == ["ok"]


class Ev:
    def __init__(self, ops, name):
        self.ops = ops
        self.name = name


class Kind(DynEventOps):
    def __init__(self, dyn):
        self.dyn = dyn
        self.busy = set()

    def match(self, system, event, argv, ev):
        return (not event or event == ev.name) and not argv

    def is_busy(self, ev):
        return ev.name in self.busy

    def free(self, ev):
        if self.is_busy(ev):
            raise KernelError(errno.EBUSY)
        self.dyn.remove(ev)

    def show(self, ev):
        return "x:%s\n" % ev.name


def test_steps_yield_between_commands_and_end_as_the_write():
    """The stepped parser (long writes through the mount): a yield after a
    command when ``pause()`` says so, the commands so far done; its value
    is the write's, and a failure is the first failing command's."""
    got = []
    steps = parse_run_steps(b"a\nb\nc\n", got.append, lambda: True)
    next(steps)
    assert got == ["a"]
    next(steps)
    assert got == ["a", "b"]
    next(steps)
    with pytest.raises(StopIteration) as done:
        next(steps)
    assert done.value.value == 6 and got == ["a", "b", "c"]
    seen = []

    def fn(line):
        if line == "bad":
            raise KernelError(errno.ENOENT)
        seen.append(line)
    steps = parse_run_steps(b"ok\nbad\nnever\n", fn, lambda: True)
    next(steps)
    with pytest.raises(KernelError):
        next(steps)
    assert seen == ["ok"]


def test_release_and_release_all():
    dyn = DynEvents()
    kind = Kind(dyn)
    dyn.register(kind)
    for name in ("a", "b", "c"):
        dyn.add(Ev(kind, name))
    dyn.release("-:b", kind)
    assert dyn.show() == "x:a\nx:c\n"
    for bad, err in (("-:b", errno.ENOENT), ("-b", errno.EINVAL), ("-:", errno.EINVAL),
                     ("!nocolon", errno.EINVAL)):
        with pytest.raises(KernelError) as e:
            dyn.create(bad)
        assert e.value.errno == err
    dyn.create("!x:a")
    assert dyn.show() == "x:c\n"
    kind.busy.add("c")
    with pytest.raises(KernelError) as e:
        dyn.release_all(None)
    assert e.value.errno == errno.EBUSY and dyn.show() == "x:c\n"
    with pytest.raises(KernelError) as e:
        dyn.create("q:foo bar")                 # no kind takes it
    assert e.value.errno == errno.EINVAL
