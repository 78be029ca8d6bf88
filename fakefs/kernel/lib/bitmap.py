"""``bitmap_parselist()`` of lib/bitmap.c, as ``cpulist_parse()`` uses it."""

from __future__ import annotations

from .ctype import DIGIT, SPACE


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


