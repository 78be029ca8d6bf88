# The slab allocator's objects as C structs (an augmenting .pxd: slub.py stays
# the one source and runs as plain Python too; docs/data-plane.md "Typed fields").
# A field read on a typed object is a load, not a lookup through the type.
cimport cython
from fakefs.kernel.mm.kmem_trace cimport KmemTrace

cdef class KmemCache:
    cdef public object name
    cdef public long long object_size, size, objects, flags, min_partial
    cdef public int order
    cdef public dict partial
    cdef public long long nr_slabs, nr_empty, inuse
    cdef public bint kmalloc_normal, no_obj_ext


cdef class Slab:
    cdef public KmemCache cache
    cdef public object page, exts
    cdef public long long inuse, next
    cdef public list free


cdef class Obj:
    cdef public Slab slab
    cdef public object ref
    cdef public long long idx


cdef class BulkObj:
    cdef public KmemCache cache
    cdef public list parts
    cdef public object ref
    cdef public long long n


cdef class SlabAllocator:
    cdef public object kernel, at, pa
    cdef public KmemTrace trace
    cdef public object tag_slab_page, tag_slab_page_node, tag_obj_exts
    cdef public long long nr_cpus, objext_size, objext_fail
    cdef public dict caches
    cdef public list kmalloc_caches

    @cython.locals(slab=Slab)
    cpdef Slab _new_slab(self, KmemCache s, node)
    cpdef _discard_slab(self, Slab slab)
    @cython.locals(s=KmemCache)
    cpdef bint _alloc_obj_exts(self, Slab slab, gfp) except -1
    @cython.locals(obj=Obj)
    cpdef Obj kmem_cache_alloc_noprof(self, KmemCache s, gfp=*, node=*)
    @cython.locals(slab=Slab, obj=Obj, inuse=cython.longlong)
    cpdef Obj _slab_alloc(self, KmemCache s, gfp, node)
    cpdef kmem_cache_free(self, KmemCache s, Obj obj)
    @cython.locals(slab=Slab, inuse=cython.longlong)
    cpdef _slab_free(self, KmemCache s, Obj obj)
    @cython.locals(s=KmemCache, obj=Obj)
    cpdef kmalloc_noprof(self, size, gfp=*, node=*)
    @cython.locals(o=Obj, s=KmemCache)
    cpdef kfree(self, obj)
