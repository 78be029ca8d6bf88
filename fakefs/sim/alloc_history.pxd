# The objects due as a typed struct (an augmenting .pxd: alloc_history.py stays
# the one source; docs/data-plane.md "Typed fields").

cdef class Lifetimes:
    cdef public object heap
    cdef public long long seq, op_time

    cpdef expire(self, double lifetime_s, fn, obj)
    cpdef first(self)
