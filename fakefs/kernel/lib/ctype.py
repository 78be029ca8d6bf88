"""The kernel's ctype (lib/ctype.c), Latin-1 aware, and the lib/string.c
helpers built on its ``isspace()``.

The kernel's ``_ctype[]`` table classes the Latin-1 upper half too: ``\\xa0``
is a space and the accented letters (but not ``×`` and ``÷``) are letters,
so a user string decoded as Latin-1 is classed byte for byte as the kernel
classes it.
"""

from __future__ import annotations

SPACE = frozenset("\t\n\v\f\r \xa0")
DIGIT = frozenset("0123456789")
ALNUM = frozenset("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                  + "".join(chr(c) for c in range(192, 256) if c not in (215, 247)))
XDIGIT = frozenset("0123456789abcdefABCDEF")


def strstrip(text: str) -> str:
    """What ``strstrip()`` leaves in the buffer: trailing space removed."""
    end = len(text)
    while end and text[end - 1] in SPACE:
        end -= 1
    return text[:end]


def skip_spaces(text: str) -> str:
    i = 0
    while i < len(text) and text[i] in SPACE:
        i += 1
    return text[i:]


def isprint(c: int) -> bool:
    """``isprint()`` of a byte: ASCII 32-126 and the Latin-1 upper half from
    0xa0 (its no-break space, punctuation and letters)."""
    return 0x20 <= c < 0x7F or 0xA0 <= c <= 0xFF
