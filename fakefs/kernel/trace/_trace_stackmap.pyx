# cython: language_level=3, boundscheck=False, wraparound=False
"""The stackmap's lookup, compiled (the data plane: docs/data-plane.md).

``get_id()`` is ``FtraceStackMap.get_id()`` (trace_stackmap.py says what
the map is and what each step does; its method is this), its elements
``StackMapElt``.  ``probe()`` is its walk over the table's slots, with the
answer encoded so that the caller does what the answer asks (count,
claim, publish): ``probe_reference()`` in trace_stackmap.py is its
specification, tests/kernel/trace/test_trace_stackmap.py holds them equal,
and the shortcuts equal to the walk.
"""

from cpython.list cimport PyList_GET_ITEM
cimport cython
from cpython cimport array as carray
from cpython.ref cimport Py_INCREF, Py_XDECREF, PyObject
from libc.errno cimport EINVAL, ENOSPC

MAX_DEPTH = 64          # the deepest stack stored (longer ones are cut)
MAX_PROBE = 64          # slots probed before a lookup gives up

cdef Py_ssize_t _MAX_DEPTH = MAX_DEPTH
cdef int _MAX_PROBE = MAX_PROBE


cdef class StackMapElt:
    """An element of the pool: a stack, and how often it was looked up
    (fields: _trace_stackmap.pxd)."""

    def __init__(self, ips):
        self.nr = len(ips)
        self.ref_count = 1
        self.ips = ips


cdef unsigned long *_keys(carray.array keys) except NULL:
    if keys.ob_descr.typecode != b"L" or len(keys) == 0:
        raise TypeError("the slots' keys are a non-empty array('L')")
    return keys.data.as_ulongs


cdef enum:
    SEEN_BITS = 12
    SEEN_SLOTS = 1 << SEEN_BITS


@cython.final
cdef class StackSeen:
    """The stack tuples last found stored, by identity: SEEN_SLOTS slots by
    the tuple's address, each holding the tuple (its own reference: an
    address stays that tuple's), its slot and element.  A stack made once
    and asked for again (a frame's tracepoint stack, ``Frame.tp``) takes
    its answer without being hashed; the map's ``_stored`` would give the
    same one (slots are vacated only by a reset, which makes a new
    ``StackSeen``)."""
    cdef PyObject *ips[SEEN_SLOTS]
    cdef long long slot[SEEN_SLOTS]
    cdef PyObject *elt[SEEN_SLOTS]

    def __dealloc__(self):
        cdef Py_ssize_t i
        for i in range(SEEN_SLOTS):
            Py_XDECREF(self.ips[i])
            Py_XDECREF(self.elt[i])

    cdef inline Py_ssize_t at(self, tuple ips) noexcept:
        return <Py_ssize_t> ((<size_t> <PyObject *> ips >> 4) & (SEEN_SLOTS - 1))

    cdef void put(self, tuple ips, long long slot, StackMapElt elt) noexcept:
        cdef Py_ssize_t h = self.at(ips)
        Py_XDECREF(self.ips[h])
        Py_XDECREF(self.elt[h])
        Py_INCREF(ips)
        Py_INCREF(elt)
        self.ips[h] = <PyObject *> ips
        self.elt[h] = <PyObject *> elt
        self.slot[h] = slot


cpdef long long get_id(smap, ips, int cpu) except? -1000:
    """``smap.get_id(ips, cpu)`` (``smap`` an ``FtraceStackMap``): the
    stack_id (slot index) of stack ``ips`` looked up on ``cpu``, or a
    negative errno."""
    cdef StackMapElt elt
    cdef long long idx
    cdef StackSeen seen = None
    cdef Py_ssize_t h
    if smap.resetting or not ips:
        return -EINVAL
    if len(ips) > _MAX_DEPTH:
        ips = ips[:_MAX_DEPTH]
    elif type(ips) is tuple:
        seen = smap._seen
        h = seen.at(ips)
        if seen.ips[h] == <PyObject *> ips:
            elt = <StackMapElt> seen.elt[h]
            elt.ref_count = (elt.ref_count + 1) & 0xFFFFFFFF
            smap.successes[cpu] += 1
            return seen.slot[h]
    hit = smap._stored.get(ips)
    if hit is not None:
        elt = hit[1]
        elt.ref_count = (elt.ref_count + 1) & 0xFFFFFFFF
        smap.successes[cpu] += 1
        if seen is not None:
            seen.put(ips, hit[0], elt)
        return hit[0]
    if not smap.empty_slots:
        # every slot claimed and the stack in none: the walk would
        # probe MAX_PROBE slots, find neither it nor room, and drop
        smap.drops[cpu] += 1
        return -ENOSPC
    key = smap.key_hash(ips)
    vals = smap.vals
    idx = probe(smap.keys, vals, key, ips, key >> smap._shift, smap.map_size - 1, _MAX_PROBE)
    if idx >= 0:                        # the stack's slot
        elt = vals[idx]
        elt.ref_count = (elt.ref_count + 1) & 0xFFFFFFFF
        smap.successes[cpu] += 1
        return idx
    if idx == -1:                       # MAX_PROBE slots, neither it nor room
        smap.drops[cpu] += 1
        return -ENOSPC
    idx = -2 - idx                      # a free slot: claimed
    smap.keys[idx] = key
    smap.empty_slots -= 1
    if smap.next_elt >= smap.max_elts:
        smap.drops[cpu] += 1            # the pool is used up: a gravestone
        return -ENOSPC
    smap.next_elt += 1
    elt = vals[idx] = StackMapElt(ips)
    smap._stored[ips] = (idx, elt)
    smap.successes[cpu] += 1
    return idx


cpdef long long probe(carray.array keys, list vals, unsigned long key, tuple ips, Py_ssize_t idx,
                      Py_ssize_t mask, int max_probe) except? -1000:
    """From slot ``idx`` on (wrapping at ``mask``), at most ``max_probe``
    slots: the slot holding ``key`` whose element's stack is ``ips`` (its
    index), else the first free slot (``-2 - index``), else -1.  ``keys``
    is an ``array('L')``."""
    cdef int i
    cdef unsigned long k
    cdef unsigned long *ks = _keys(keys)
    cdef PyObject *val
    for i in range(max_probe):
        idx &= mask
        k = ks[idx]
        if k == key:
            val = PyList_GET_ITEM(vals, idx)
            if <object> val is not None:
                stored = (<object> val).ips
                if stored is ips or stored == ips:
                    return idx
            # claimed-but-empty slot or a 32-bit collision: keep probing
        elif k == 0:
            return -2 - idx
        idx += 1
    return -1
