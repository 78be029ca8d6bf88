"""Pid lists as trace_pid_write() builds them (trace_pid.py)."""

from __future__ import annotations

import errno

import pytest

from fakefs.kernel.fs.pseudo import KernelError
from fakefs.kernel.trace.trace_pid import trace_pid_write


def err(cur, text):
    with pytest.raises(KernelError) as e:
        trace_pid_write(cur, text)
    return e.value.errno


def test_a_list_holds_pids_below_2_to_the_30():
    """pid_list.c's MAX_PID (1 << 30) is the limit, not pid_max (4194304 on
    Debian) nor PID_MAX_LIMIT: beyond it the write fails with -1 (EPERM)
    and the list stays as it was."""
    assert trace_pid_write(None, "4194304 4194305\n") == {4194304, 4194305}
    assert trace_pid_write(None, str(2**30 - 1)) == {2**30 - 1}
    assert err(frozenset({3}), "5 %d" % 2**30) == errno.EPERM
    assert err(None, "0xffffffff") == errno.EPERM        # (pid_t)-1, unsigned in pid_split()
    # (pid_t) keeps the low 32 bits of the unsigned long
    assert trace_pid_write(None, str(2**32 + 9)) == {9}


def test_words_and_empty_lists():
    assert trace_pid_write(frozenset({1}), "2\t3") == {1, 2, 3}
    assert trace_pid_write(None, "\n") is None
    assert err(None, "-1") == errno.EINVAL
    assert err(None, "1" * 128) == errno.EINVAL
