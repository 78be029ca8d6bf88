"""What the dynamic-event tests share (kprobe, fprobe, eprobe, synthetic
events): the shared kernel as no earlier test left it, a command appended to
``dynamic_events``, and the error log's last entry."""

import pytest

from ftrace_helpers import APPEND
from kfiles import rd, wr


def fresh(k):
    """``k`` without enabled events, dynamic events, errors or entries."""
    wr(k, "events/enable", "0\n")
    wr(k, "dynamic_events", "\n")
    wr(k, "error_log", "\n")
    wr(k, "trace", "\n")
    return k


def add(k, cmd, path="dynamic_events"):
    return wr(k, path, cmd + "\n", APPEND)


def last_error(k):
    """(subsystem line, command, caret position) of the last error_log entry."""
    lines = rd(k, "error_log").splitlines()
    return lines[-3].split("] ", 1)[1], lines[-2][len("  Command: "):], len(lines[-1]) - 11 - 1


@pytest.fixture
def k(booted):
    """The shared kernel (``ftrace_helpers.booted``), fresh."""
    return fresh(booted[0])


@pytest.fixture
def clock(booted):
    return booted[1]
