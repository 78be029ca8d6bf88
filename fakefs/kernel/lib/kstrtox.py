"""``kstrtoull()`` and ``kstrtoll()`` of lib/kstrtox.c, base 0, as the event
filter parser calls them: the value, or None where the kernel returns
-EINVAL or -ERANGE.

Base 0 reads ``0x``/``0X`` as hex (only when a hex digit follows), a
leading ``0`` as octal, anything else as decimal; ``+`` may lead, ``-``
only for the signed one; one trailing newline is allowed.  (``params.kstrtoul``
is the raising variant the other tracefs files use.)
"""

from __future__ import annotations

from .ctype import XDIGIT


def _parse_ull(s: str):
    """``_kstrtoull(s, 0)``: the value, or None (-EINVAL / -ERANGE)."""
    if s[:1] == "0":
        if s[1:2] in ("x", "X") and s[2:3] in XDIGIT:
            base, s = 16, s[2:]
        else:
            base = 8
    else:
        base = 10
    val = 0
    n = 0
    for ch in s:
        c = ch.lower()
        if "0" <= c <= "9":
            d = ord(c) - 48
        elif "a" <= c <= "f":
            d = ord(c) - 87
        else:
            break
        if d >= base:
            break
        val = val * base + d
        n += 1
    if not n:
        return None
    rest = s[n:]
    if rest == "\n":
        rest = ""
    if rest or val >= 1 << 64:
        return None
    return val


def kstrtoull(s: str):
    if s[:1] == "+":
        s = s[1:]
    return _parse_ull(s)


def kstrtoll(s: str):
    if s[:1] == "-":
        v = _parse_ull(s[1:])
        if v is None or v > 1 << 63:
            return None
        return -v
    v = kstrtoull(s)
    if v is None or v >= 1 << 63:
        return None
    return v

