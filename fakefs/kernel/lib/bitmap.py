"""``bitmap_parselist()``, ``bitmap_parse()`` and ``%*pb`` of lib/bitmap-str.c
and lib/vsprintf.c: the text forms of CPU masks."""

from __future__ import annotations

import errno

from .ctype import DIGIT, SPACE

HEX = "0123456789abcdefABCDEF"


def _end_of_region(c: str) -> bool:
    """``__end_of_region()``: the kernel's isspace() (ctype.SPACE) or a comma."""
    return c in SPACE or c == ","


def bitmap_parse(text: str, nbits: int) -> int:
    """``bitmap_parse()`` of a user string (``bitmap_parse_user()``: the
    string ends at its first newline or NUL): the mask of comma-separated
    32-bit hex chunks (``ff,ffffffff``), read from the right.  Raises
    OSError(EINVAL) for a character that is not hex, OSError(EOVERFLOW) for
    a chunk of more than 8 digits, more chunks than ``nbits`` needs, or a
    bit at ``nbits`` or above.  After 8 digits the kernel reads one more
    character and drops it when it is not a hex digit (``x00000001`` is
    1)."""
    cut = [i for i in (text.find("\n"), text.find("\0")) if i >= 0]
    end = (min(cut) if cut else len(text)) - 1
    left = (nbits + 31) // 32          # chunks the mask has room for
    mask = 0
    chunk = 0
    while True:
        while end >= 0 and _end_of_region(text[end]):
            end -= 1
        if end < 0:
            break
        if not left:
            raise OSError(errno.EOVERFLOW, "bitmap_parse")
        left -= 1
        val = 0
        for i in range(0, 32, 4):
            c = text[end]
            end -= 1
            if c not in HEX:
                raise OSError(errno.EINVAL, "bitmap_parse")
            val |= int(c, 16) << i
            if end < 0 or _end_of_region(text[end]):
                break
        else:
            end -= 1                   # bitmap_get_x32_reverse() reads a ninth
            if text[end + 1] in HEX:
                raise OSError(errno.EOVERFLOW, "bitmap_parse")
        mask |= val << (32 * chunk)
        chunk += 1
    if mask >> nbits:
        raise OSError(errno.EOVERFLOW, "bitmap_parse")
    return mask


def bitmap_string(mask: int, nbits: int) -> str:
    """``%*pb``: 32-bit hex chunks from the top, comma-separated, the first
    as wide as its bits need, zero-padded."""
    first = nbits % 32 or 32
    out = []
    width = (first + 3) // 4
    for i in range((nbits + 31) // 32 * 32 - 32, -1, -32):
        val = (mask >> i) & ((1 << (first if not out else 32)) - 1)
        out.append("%0*x" % (width if not out else 8, val))
    return ",".join(out)


def cpulist_parse(text: str, nbits: int):
    """The set of CPUs of a cpulist (``0-3,5``, ``0-7:2/4``, ``N``, ``all``),
    or None when the kernel refuses it."""
    s = text + "\0"
    i = 0
    out = set()
    last = nbits - 1

    def getnum(i):
        if s[i] == "N":
            return last, i + 1
        j = i
        while s[j] in DIGIT:
            j += 1
        if j == i:
            return None, i
        n = int(s[i:j])
        if n >= 1 << 32:
            return None, i
        return n, j

    def end_of_region(c):
        return c in SPACE or c in ",\0\n"

    while True:
        while s[i] in SPACE or s[i] == ",":
            i += 1
        if s[i] in "\0\n":
            return out
        if s[i:i + 3].lower() == "all":
            start, end, i = 0, last, i + 3
        else:
            start, i = getnum(i)
            if start is None:
                return None
            if end_of_region(s[i]):
                end = start
            elif s[i] != "-":
                return None
            else:
                end, i = getnum(i + 1)
                if end is None:
                    return None
        if end_of_region(s[i]):
            off = grp = end + 1
        elif s[i] != ":":
            return None
        else:
            off, i = getnum(i + 1)
            if off is None or s[i] != "/":
                return None
            grp, i = getnum(i + 1)
            if grp is None:
                return None
        if start > end or grp == 0 or off > grp:
            return None
        if end >= nbits:
            return None
        b = start
        while b <= end:
            out.update(range(b, b + min(end - b + 1, off)))
            b += grp




def bitmap_list_string(mask: int) -> str:
    """``%*pbl``: the set bits as ranges, ``0-3,8``."""
    out = []
    bit = 0
    while mask >> bit:
        if mask >> bit & 1:
            end = bit
            while mask >> (end + 1) & 1:
                end += 1
            out.append("%d" % bit if end == bit else "%d-%d" % (bit, end))
            bit = end + 1
        else:
            bit += 1
    return ",".join(out)
