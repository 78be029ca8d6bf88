# The allocators' tracepoints as typed fields (an augmenting .pxd: kmem_trace.py
# stays the one source; docs/data-plane.md "Typed fields").
from fakefs.kernel.tracepoint cimport Tracepoint

cdef class KmemTrace:
    cdef public object when, free_site, kallsyms, inlined_into
    cdef public Tracepoint tp_kmalloc, tp_cache_alloc, tp_kfree, tp_cache_free
    cdef public Tracepoint tp_page_alloc, tp_page_free
    cdef public dict _sites

    cpdef at(self, cpu, ts)
    cpdef call_site(self, tag)
    cpdef _fire(self, Tracepoint tp, tuple args)
    cpdef kmalloc(self, tag, ptr, req, alloc, gfp, node)
    cpdef kmem_cache_alloc(self, tag, ptr, req, alloc, gfp, node, accounted)
    cpdef kfree(self, ptr)
    cpdef kmem_cache_free(self, ptr, name)
