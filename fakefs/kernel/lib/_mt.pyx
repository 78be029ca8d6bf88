# cython: language_level=3
"""Proving the generator hack of ``_mt.pxd`` at import, and handing out the
state pointer only where it holds."""

import random

from cpython.ref cimport PyObject
from libc.math cimport log

_C_RANDOM = random.Random.random     # the C method (_random.Random.random)
_PY_EXPOVARIATE = random.Random.expovariate


cdef bint _check():
    cdef fakefs_mt_t *g
    a = random.Random(20260)
    b = random.Random(20260)
    g = <fakefs_mt_t *> <PyObject *> a
    # 700 draws: 1,400 outputs, across two refills of the 624-word state
    for _ in range(700):
        if mt_random(g) != b.random():
            return False
    # and Python's draws continue where the pointer's stopped
    return a.random() == b.random() and a.getstate() == b.getstate()


cdef bint LAYOUT_OK = _check()


def layout_ok():
    """The layout of ``_mt.pxd`` is this Python's (proved at import)."""
    return LAYOUT_OK


cdef object _RANDOM = random.Random


cdef fakefs_mt_t *direct(object rng):
    """The state of ``rng`` to draw from in C, or NULL: call ``rng.random()``."""
    if LAYOUT_OK and isinstance(rng, _RANDOM) and type(rng).random is _C_RANDOM:
        return <fakefs_mt_t *> <PyObject *> rng
    return NULL


def draw_for_test(rng):
    """One draw through ``direct()`` (the tests')."""
    cdef fakefs_mt_t *g = direct(rng)
    if g == NULL:
        raise TypeError("not drawn directly")
    return mt_random(g)


def is_direct(rng):
    return direct(rng) != NULL


def expovariate(rng, double lambd):
    """``rng.expovariate(lambd)``: the same draw and the same double (3.11's
    ``-log(1.0 - random()) / lambd``, libm's ``log`` as ``math.log``'s)
    without a Python frame: the machine draws ~22,000 a simulated second
    with every event traced (a subclass's own is called)."""
    cdef fakefs_mt_t *g = direct(rng)
    if g == NULL or type(rng).expovariate is not _PY_EXPOVARIATE:
        return rng.expovariate(lambd)
    return -log(1.0 - mt_random(g)) / lambd
