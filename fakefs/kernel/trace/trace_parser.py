"""One word of a write, as ``trace_get_user()`` (kernel/trace/trace.c) reads it
for a file whose parser lives for one write (``set_event``)."""

from __future__ import annotations

import errno

from ..fs.pseudo import KernelError
from ..lib.ctype import SPACE
from ..lib.kstrtox import RangeError, kstrtoul_from_user

EVENT_BUF_SIZE = 127        # set_event's parser holds EVENT_BUF_SIZE + 1 bytes


def _blank(c: str) -> bool:
    """The kernel's ``isspace()`` (lib/ctype.c: not Python's, which takes
    \\x1c-\\x1f and \\x85 too) or a NUL."""
    return c in SPACE or c == "\0"


def get_user_word(text: str, size: int) -> tuple[str | None, int]:
    """(the first word of ``text``, or None if it holds only blanks; how many
    characters the write consumed: the blanks before it, the word and the
    one blank after it).  EINVAL for a word of ``size`` characters or more."""
    n = len(text)
    i = 0
    while i < n - 1 and text[i] in SPACE:
        i += 1
    if n == 0 or _blank(text[i]):
        return None, min(i + 1, n)
    j = i
    while j < n and not _blank(text[j]):
        j += 1
    if j - i > size - 1:
        raise KernelError(errno.EINVAL)
    return text[i:j], min(j + 1, n)


def user_ulong(data: bytes) -> int:
    """``kstrtoul_from_user(ubuf, cnt, 10, &val)`` of a write: the number,
    or KernelError EINVAL / ERANGE."""
    try:
        return kstrtoul_from_user(data, 10)
    except RangeError:
        raise KernelError(errno.ERANGE) from None
    except ValueError:
        raise KernelError(errno.EINVAL) from None
