# The stackmap's lookup (_trace_stackmap.pyx), as the compiled commit uses it.

from cpython cimport array as carray

cdef class StackMapElt:
    cdef public Py_ssize_t nr               # the stack's depth
    cdef public unsigned long long ref_count  # lookups of it (a u32: wraps)
    cdef public object ips                  # the stack (a tuple)


cpdef long long get_id(smap, ips, int cpu) except? -1000
cpdef long long probe(carray.array keys, list vals, unsigned long key, tuple ips, Py_ssize_t idx,
                      Py_ssize_t mask, int max_probe) except? -1000
