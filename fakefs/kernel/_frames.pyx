# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""A kernel stack frame, compiled (the data plane: docs/data-plane.md).

``Frame`` is one distinct kernel stack: a function, the frame it was called
from (``parent``), its entry ip and the return address into the caller
(``site``), its depth and context (its fields: ``_frames.pxd``).  The
unwinder's view: its stack tuple (entry ip, then the return addresses,
innermost first, as ``stack_trace_save()`` stores them) is made from those
when asked for (``stack``; ``frame_ips`` in C), and the tracers take a
call's fields from it (``_trace_function``, ``_trace_functions_graph``).
``frames.py`` keeps them as a tree.

A frame also carries what the machine's walk remembers of it (its kids,
``visits``, ``called``: fakefs/sim/_walk.pyx reads and sets them in
C), as the tracers' answers for it are kept in it (``call``, ``tp``,
``sid_*``): one struct a stack, no side table per owner.
"""

from cpython.ref cimport Py_DECREF, Py_INCREF, PyObject
from cpython.tuple cimport PyTuple_New, PyTuple_SET_ITEM
from libc.stdlib cimport free, malloc

# The addresses in the stacks made (entry ips, return addresses), one int
# object each: a stack is made anew when asked for, and what keeps one (the
# stackmap, a buffer's tuples, a cache) would otherwise keep its own ints,
# ~32 bytes an address (a stack in the stackmap ~1 KB, not ~260).  The
# graph holds a few thousand distinct addresses (ADDRS_KEPT: never reached).
ADDRS_KEPT = 1 << 20
cdef dict _addrs = {}


# In front of the dict, a table of ADDR_SLOTS slots by the address's hash
# (its own references: no int object made to look one up, as the dict's
# lookup needs); emptied with the dict.
cdef enum:
    ADDR_BITS = 14
    ADDR_SLOTS = 1 << ADDR_BITS
cdef unsigned long long _slot_key[ADDR_SLOTS]
cdef PyObject *_slot_val[ADDR_SLOTS]


cdef void _forget_slots() noexcept:
    cdef Py_ssize_t i
    for i in range(ADDR_SLOTS):
        if _slot_val[i] != NULL:
            Py_DECREF(<object> _slot_val[i])
            _slot_val[i] = NULL


cdef inline object _addr(unsigned long long a):
    cdef Py_ssize_t h = <Py_ssize_t> ((a * 0x9E3779B97F4A7C15ULL) >> (64 - ADDR_BITS))
    cdef PyObject *v = _slot_val[h]
    if v != NULL and _slot_key[h] == a:
        return <object> v
    cdef object k = a
    cdef PyObject *got = PyDict_GetItem(_addrs, k)
    if got is not NULL:
        k = <object> got
    else:
        if len(_addrs) >= ADDRS_KEPT:
            _addrs.clear()
            _forget_slots()
        _addrs[k] = k
    if _slot_val[h] != NULL:
        Py_DECREF(<object> _slot_val[h])
    Py_INCREF(k)
    _slot_val[h] = <PyObject *> k
    _slot_key[h] = a
    return k


cdef class Frame:
    """One distinct kernel stack: a function and the frames below it
    (its fields: _walk.pxd).  Its stack tuple is made when asked for, from
    the entry ip and the return addresses into the callers below: the
    function tracer's entry never needs it (its fields are the entry ip and
    the return address into the caller), a stack option writes it from
    the frames (``frame_ips``) or asks the stackmap once, so a frame costs
    a few fields, not a copy of the stack below."""

    def __init__(self, int fn, Frame parent, unsigned long long entry, unsigned long long site,
                 irq, int mode, int ctx):
        self.fn = fn
        self.parent = parent
        self.entry = entry
        self.site = site
        self.k1key = NO_KID
        self.depth = 1 if parent is None else parent.depth + 1
        self.irq = irq
        self.tp = None
        self.mode = mode
        self.call = None
        self.ctx = ctx
        self.visits = 0
        self.called = False

    # ---- its kids (_walk.pxd: ``frame_kid``, ``frame_put_kid``) ----
    def kid(self, int key):
        """The frame of the call (``key``: the callee's id; -1 - the entry's
        id for an interrupt) made from here, False where it cannot be
        made, None when not made yet."""
        cdef PyObject *hit = frame_kid(self, key)
        return None if hit is NULL else <object> hit

    def set_kid(self, int key, kid):
        frame_put_kid(self, key, kid)

    def forget_kids(self):
        self.k1key = NO_KID
        self.k1 = None
        self.more = None

    @property
    def kids(self):
        """Every kid by key (a new dict)."""
        d = {}
        if self.k1key != NO_KID:
            d[self.k1key] = self.k1
            if self.more is not None:
                d.update(self.more)
        return d

    @property
    def stack(self):
        """(entry ip,) + the return addresses below this function,
        innermost first (as ``stack_trace_save()`` stores them): a new
        tuple each time (``frame_ips`` in C)."""
        return self.make_stack()

    cdef tuple make_stack(self):
        cdef unsigned long long near[128]
        cdef unsigned long long *ips = near
        cdef int i, n
        cdef tuple t
        if self.depth > 128:
            ips = <unsigned long long *> malloc(self.depth * sizeof(unsigned long long))
            if ips == NULL:
                raise MemoryError()
        try:
            n = frame_ips(self, ips, self.depth)
            t = PyTuple_New(n)
            for i in range(n):
                v = _addr(ips[i])
                Py_INCREF(v)
                PyTuple_SET_ITEM(t, i, v)
            return t
        finally:
            if ips != near:
                free(ips)
