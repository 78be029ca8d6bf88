# The allocation workload's arrivals as C structs (an augmenting .pxd:
# alloc_arrivals.py stays the one source and runs as Python too;
# docs/data-plane.md "Typed fields").
cimport cython
from fakefs.kernel.sched cimport Scheduler, Task
from fakefs.kernel.mm.kmem_trace cimport KmemTrace
from fakefs.sim.alloc_history cimport Lifetimes

cdef class OpKind:
    cdef public double rate
    cdef public object site, do


cdef class Shares:
    cdef public list value, acc
    cdef public long long acc_ns


cdef class Arrivals:
    cdef public object aw, machine, rng, window, armed_at
    cdef public Scheduler sched
    cdef public int nr_cpus
    cdef public Lifetimes life
    cdef public KmemTrace trace
    cdef public list kinds
    cdef public Shares shares
    cdef public bint live
    cdef public long long shift, armed_n
    cdef public dict groups, weights, _states

    cpdef arm(self, int cpu, r, t, w=*)
    @cython.locals(task=Task, k=OpKind, life=Lifetimes)
    cpdef fire(self, t, int cpu, stint)
    cpdef _make(self, int cpu, t, do)
    @cython.locals(life=Lifetimes)
    cpdef due(self, t, int cpu, n)
    cpdef _rearm(self, t)
    cpdef _group(self, pid)
    cpdef _weights(self, pid)
