# A tracepoint as a C struct (an augmenting .pxd: tracepoint.py stays the one
# source; docs/data-plane.md "Typed fields"): code holding a typed Tracepoint
# tests ``tp.probes`` with a load.

cdef class Tracepoint:
    cdef public object name
    cdef public list probes
    cdef public bint driven
