"""``kstrtoull()``, ``kstrtoll()``, ``kstrtoul()`` and ``kstrtoul_from_user()``
of lib/kstrtox.c: the one number parser of the simulated kernel.

Base 0 reads ``0x``/``0X`` as hex (only when a hex digit follows), a
leading ``0`` as octal, anything else as decimal; base 16 skips a ``0x``.
``+`` may lead, ``-`` only for the signed one; one trailing newline is
allowed.  A number past 64 bits is -ERANGE even when junk follows it (the
kernel looks at the overflow first).  ``kstrtoul`` raises (ValueError, or
RangeError for -ERANGE); ``kstrtoull``/``kstrtoll`` return None instead, as
the event filter parser uses them.
"""

from __future__ import annotations

from .ctype import XDIGIT

ULONG_MAX = (1 << 64) - 1
# kstrtoul_from_user() copies at most this many bytes (its buffer of
# 1 + 64 + 1 + 1 bytes, less the terminating NUL)
KSTRTOUL_USER_MAX = 66


class RangeError(ValueError):
    """What ``kstrtoul()`` answers -ERANGE for: a number beyond ULONG_MAX."""


def _parse(s: str, base: int) -> int:
    """``_kstrtoull()``: the value, or ValueError / RangeError."""
    if base == 0:
        if s[:1] == "0":
            base = 16 if s[1:2] in ("x", "X") and s[2:3] in XDIGIT else 8
        else:
            base = 10
    if base == 16 and s[:2] in ("0x", "0X"):
        s = s[2:]
    val = 0
    n = 0
    for ch in s:
        c = ch.lower()
        if "0" <= c <= "9":
            d = ord(c) - 48
        elif "a" <= c <= "z":
            d = ord(c) - 87
        else:
            break
        if d >= base:
            break
        val = val * base + d
        n += 1
    if val > ULONG_MAX:
        raise RangeError(s)
    if not n:
        raise ValueError(s)
    rest = s[n:]
    if rest not in ("", "\n"):
        raise ValueError(s)
    return val


def kstrtoul(text: str, base: int = 0) -> int:
    """``kstrtoul()``: raises ValueError (RangeError: beyond 64 bits)."""
    return _parse(text[1:] if text[:1] == "+" else text, base)


def kstrtoul_from_user(data: bytes, base: int = 10) -> int:
    """``kstrtoul_from_user()``: the first KSTRTOUL_USER_MAX bytes of a
    write, up to a NUL, through ``kstrtoul``."""
    return kstrtoul(data[:KSTRTOUL_USER_MAX].split(b"\0", 1)[0].decode("latin-1"), base)


def kstrtoull(s: str, base: int = 0):
    """The value, or None where the kernel returns -EINVAL or -ERANGE."""
    try:
        return kstrtoul(s, base)
    except ValueError:
        return None


def kstrtoll(s: str, base: int = 0):
    if s[:1] == "-":
        try:
            v = _parse(s[1:], base)          # no "+" after the "-"
        except ValueError:
            return None
        if v > 1 << 63:
            return None
        return -v
    v = kstrtoull(s, base)
    if v is None or v >= 1 << 63:
        return None
    return v
