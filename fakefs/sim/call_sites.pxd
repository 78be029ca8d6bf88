# The call sites' ways up as a C struct (an augmenting .pxd: call_sites.py stays
# the one source; docs/data-plane.md "Typed fields").
cimport cython
from fakefs.sim.walk cimport Cpu, TaskState

cdef class CallSites:
    cdef public object wg, ks, frames, walk, sources, _way_pids, _all_roots
    cdef public dict _callers, _reach, _led, _fronts, _ways, _names, _keys, _allocator
    cdef public dict _ups, _reaches
    cdef public long long _nways

    @cython.locals(ts=TaskState, mine=dict, called=list)
    cpdef stack(self, rng, Cpu c, kind, site, task_only=*)
    @cython.locals(ways=dict, mine=dict)
    cpdef _keep_way(self, pid, key, way)
    cpdef _name(self, site)
    cpdef _frame_of(self, fr, chain)
