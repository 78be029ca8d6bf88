# Drawing from a random.Random without calling it (the data plane: see
# docs/data-plane.md, "The generator").
#
# THE HACK.  The whole kernel shares one generator per subsystem, a
# ``random.Random``; the compiled loops draw from it several times per
# simulated call, and calling ``rng.random()`` through Python costs more than
# the draw.  CPython 3.11's ``_random.Random`` object is
#     PyObject_HEAD; int index; uint32_t state[624];
# (Modules/_randommodule.c), and ``random()`` is MT19937's genrand_res53 on
# that state.  ``direct()`` gives a pointer to that state when (a) the
# object's ``random`` is the C one (a subclass overriding it is called as
# before) and (b) the layout was proved at import: ``_mt.pyx``'s
# ``layout_ok()`` draws from a fresh generator both ways, across a refill,
# and compares.  Draws through the pointer advance the object's own state:
# Python code drawing in between sees the same stream, with nothing to sync.
# Anything else (another layout, another Python) falls back to calling it.

from libc.stdint cimport uint32_t
from cpython.ref cimport PyObject

cdef extern from *:
    """
    typedef struct {
        PyObject_HEAD
        int index;
        uint32_t state[624];
    } fakefs_mt_t;
    """
    ctypedef struct fakefs_mt_t:
        int index
        uint32_t state[624]


cdef extern from *:
    """
    /* MT19937's refill of its 624 words (the reference algorithm), once
       every 624 outputs: kept out of line, so that the draw itself, inlined
       wherever the compiled loops draw, stays a load and four shifts. */
    static void __attribute__((noinline)) fakefs_mt_refill(uint32_t *mt) {
        uint32_t y;
        int k;
        for (k = 0; k < 624 - 397; k++) {
            y = (mt[k] & 0x80000000U) | (mt[k + 1] & 0x7fffffffU);
            mt[k] = mt[k + 397] ^ (y >> 1) ^ ((y & 1) ? 0x9908b0dfU : 0U);
        }
        for (; k < 623; k++) {
            y = (mt[k] & 0x80000000U) | (mt[k + 1] & 0x7fffffffU);
            mt[k] = mt[k + 397 - 624] ^ (y >> 1) ^ ((y & 1) ? 0x9908b0dfU : 0U);
        }
        y = (mt[623] & 0x80000000U) | (mt[0] & 0x7fffffffU);
        mt[623] = mt[396] ^ (y >> 1) ^ ((y & 1) ? 0x9908b0dfU : 0U);
    }
    """
    void fakefs_mt_refill(uint32_t *mt) nogil


cdef inline uint32_t mt_next(fakefs_mt_t *g) noexcept nogil:
    """MT19937's next 32-bit output (the reference algorithm)."""
    cdef uint32_t y
    if g.index >= 624:
        fakefs_mt_refill(g.state)
        g.index = 0
    y = g.state[g.index]
    g.index += 1
    y ^= y >> 11
    y ^= (y << 7) & 0x9d2c5680U
    y ^= (y << 15) & 0xefc60000U
    y ^= y >> 18
    return y


cdef inline double mt_random(fakefs_mt_t *g) noexcept nogil:
    """``random.random()``: 53 bits from two outputs (genrand_res53)."""
    cdef uint32_t a = mt_next(g) >> 5, b = mt_next(g) >> 6
    return (a * 67108864.0 + b) * (1.0 / 9007199254740992.0)


cdef fakefs_mt_t *direct(object rng)
