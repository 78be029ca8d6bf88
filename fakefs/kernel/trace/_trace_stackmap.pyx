# cython: language_level=3, boundscheck=False, wraparound=False
"""The stackmap's probing, compiled (the data plane: docs/data-plane.md).

``probe()`` is the walk of ``FtraceStackMap.get_id()`` over the table's
slots (trace_stackmap.py), with the answer encoded so that the caller does
what the answer asks (count, claim, publish): ``probe_reference()`` in
trace_stackmap.py is its specification, tests/kernel/trace/
test_trace_stackmap.py holds them equal.
"""

from cpython.list cimport PyList_GET_ITEM
from cpython.long cimport PyLong_AsUnsignedLong
from cpython.ref cimport PyObject


def probe(list keys, list vals, unsigned long key, tuple ips, Py_ssize_t idx, Py_ssize_t mask,
          int max_probe):
    """From slot ``idx`` on (wrapping at ``mask``), at most ``max_probe``
    slots: the slot holding ``key`` whose element's stack is ``ips`` (its
    index), else the first free slot (``-2 - index``), else -1."""
    cdef int i
    cdef unsigned long k
    cdef PyObject *val
    for i in range(max_probe):
        idx &= mask
        k = PyLong_AsUnsignedLong(<object> PyList_GET_ITEM(keys, idx))
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
