"""Bob Jenkins' lookup3 hash as used by the kernel's ``jhash2()`` (include/linux/jhash.h).

Written from the public-domain lookup3 description: the state (a, b, c) starts
at ``0xdeadbeef + (length << 2) + initval``; three 32-bit words are added per
round and mixed; the last one to three words are added and a final mix is
applied.  ``jhash2_ulongs`` hashes an array of native ``unsigned long`` the way
the stackmap does (``jhash2((u32 *)ips, nr * 2, seed)`` on 64-bit): compiled
(``_jhash.pyx``), with ``jhash2_ulongs_py`` its plain-Python specification.
"""

from __future__ import annotations

import struct

from ._jhash import jhash2_ulongs  # noqa: F401  (the compiled one, for the stackmap)

M32 = 0xFFFFFFFF
JHASH_INITVAL = 0xDEADBEEF


def _rol(x: int, k: int) -> int:
    return ((x << k) | (x >> (32 - k))) & M32


def jhash2(words, initval: int) -> int:
    length = len(words)
    a = b = c = (JHASH_INITVAL + (length << 2) + initval) & M32
    i = 0
    # rotations are written out, and each one's mask shared with the
    # subtraction it is XORed into (c < 2**32: its two shifted parts do not
    # overlap, so OR is XOR): this runs once per distinct stack
    while length > 3:
        a = (a + words[i]) & M32
        b = (b + words[i + 1]) & M32
        c = (c + words[i + 2]) & M32
        a = ((a - c) ^ (c << 4) ^ (c >> 28)) & M32; c = (c + b) & M32
        b = ((b - a) ^ (a << 6) ^ (a >> 26)) & M32; a = (a + c) & M32
        c = ((c - b) ^ (b << 8) ^ (b >> 24)) & M32; b = (b + a) & M32
        a = ((a - c) ^ (c << 16) ^ (c >> 16)) & M32; c = (c + b) & M32
        b = ((b - a) ^ (a << 19) ^ (a >> 13)) & M32; a = (a + c) & M32
        c = ((c - b) ^ (b << 4) ^ (b >> 28)) & M32; b = (b + a) & M32
        length -= 3
        i += 3
    if length == 0:
        return c
    if length == 3:
        c = (c + words[i + 2]) & M32
    if length >= 2:
        b = (b + words[i + 1]) & M32
    a = (a + words[i]) & M32
    c ^= b; c = (c - _rol(b, 14)) & M32
    a ^= c; a = (a - _rol(c, 11)) & M32
    b ^= a; b = (b - _rol(a, 25)) & M32
    c ^= b; c = (c - _rol(b, 16)) & M32
    a ^= c; a = (a - _rol(c, 4)) & M32
    b ^= a; b = (b - _rol(a, 14)) & M32
    c ^= b; c = (c - _rol(b, 24)) & M32
    return c


def jhash2_ulongs_py(ips, initval: int) -> int:
    """Hash 64-bit words as the kernel sees them in memory (native byte
    order): the specification of the compiled ``jhash2_ulongs``."""
    n = len(ips)
    words = struct.unpack("=%dI" % (2 * n), struct.pack("=%dQ" % n, *ips))
    return jhash2(words, initval)
