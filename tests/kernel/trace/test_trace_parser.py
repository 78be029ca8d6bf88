"""One word per write, as trace_get_user() reads set_event."""

from __future__ import annotations

import errno

import pytest

from fakefs.kernel.fs.pseudo import KernelError
from fakefs.kernel.trace.trace_parser import get_user_word


def test_one_word_and_its_delimiter():
    assert get_user_word("sched:sched_switch sched:sched_wakeup", 128) == ("sched:sched_switch", 19)
    assert get_user_word("abc", 128) == ("abc", 3)
    assert get_user_word("  abc\n", 128) == ("abc", 6)
    assert get_user_word("   ", 128) == (None, 3)
    assert get_user_word("\0abc", 128) == (None, 1)


def test_a_word_longer_than_the_parser_is_refused():
    assert get_user_word("x" * 127, 128) == ("x" * 127, 127)
    with pytest.raises(KernelError) as e:
        get_user_word("x" * 128, 128)
    assert e.value.errno == errno.EINVAL


def test_spaces_are_the_kernels_isspace_not_pythons():
    """lib/ctype.c: tab to carriage return, space and Latin-1's no-break
    space; \\x1c-\\x1f and \\x85 (spaces to str.isspace) are word bytes."""
    assert get_user_word("sched:sched_switch\xa0x", 128) == ("sched:sched_switch", 19)
    assert get_user_word("sched:sched_switch\x1cx", 128) == ("sched:sched_switch\x1cx", 20)
    assert get_user_word("\x85abc", 128) == ("\x85abc", 4)
    assert get_user_word("\x1f", 128) == ("\x1f", 1)
