# cython: language_level=3, boundscheck=False, wraparound=False
"""``jhash2()`` of an array of ``unsigned long`` (the stackmap's key),
compiled (docs/data-plane.md).  The specification is ``jhash.jhash2()``
(lookup3 in plain Python); tests/kernel/lib/test_jhash.py holds them equal."""

from libc.stdint cimport uint32_t, uint64_t
from libc.stdlib cimport free, malloc


cdef inline uint32_t rol32(uint32_t x, int k) nogil:
    return (x << k) | (x >> (32 - k))


cdef uint32_t jhash2_words(const uint32_t *k, Py_ssize_t length, uint32_t initval) nogil:
    cdef uint32_t a, b, c
    a = b = c = 0xdeadbeefU + (<uint32_t> length << 2) + initval
    while length > 3:
        a += k[0]
        b += k[1]
        c += k[2]
        a -= c; a ^= rol32(c, 4); c += b
        b -= a; b ^= rol32(a, 6); a += c
        c -= b; c ^= rol32(b, 8); b += a
        a -= c; a ^= rol32(c, 16); c += b
        b -= a; b ^= rol32(a, 19); a += c
        c -= b; c ^= rol32(b, 4); b += a
        length -= 3
        k += 3
    if length == 0:
        return c
    if length == 3:
        c += k[2]
    if length >= 2:
        b += k[1]
    a += k[0]
    c ^= b; c -= rol32(b, 14)
    a ^= c; a -= rol32(c, 11)
    b ^= a; b -= rol32(a, 25)
    c ^= b; c -= rol32(b, 16)
    a ^= c; a -= rol32(c, 4)
    b ^= a; b -= rol32(a, 14)
    c ^= b; c -= rol32(b, 24)
    return c


def jhash2_ulongs(ips, uint32_t initval):
    """Hash 64-bit words as the kernel sees them in memory: each the low
    32-bit half first (x86-64 is little-endian)."""
    cdef Py_ssize_t n = len(ips), i
    cdef uint32_t small[128]
    cdef uint32_t *w = small
    cdef uint64_t v
    if 2 * n > 128:
        w = <uint32_t *> malloc(2 * n * sizeof(uint32_t))
        if w == NULL:
            raise MemoryError()
    try:
        for i in range(n):
            v = ips[i]
            w[2 * i] = <uint32_t> v
            w[2 * i + 1] = <uint32_t> (v >> 32)
        return jhash2_words(w, 2 * n, initval)
    finally:
        if w != small:
            free(w)
