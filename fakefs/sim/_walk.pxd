# The compiled walk's pick tables and walker, as other compiled modules use
# them (_walk.pyx); its frames are the kernel's (_frames.pxd).

cimport cython

from fakefs.kernel._frames cimport Frame, NO_KID, frame_kid, frame_put_kid
from fakefs.kernel.lib._mt cimport fakefs_mt_t


cdef class Table:
    cdef int nf
    cdef int *off
    cdef int *callee
    cdef double *cum
    cdef double *total
    cdef char *has
    cdef object source       # the list it was made from (kept alive: keyed by id)


cdef class Graph:
    cdef int nf
    cdef int *flags
    cdef double *again
    cdef unsigned long long *entry
    cdef int *fctx            # the context each function gives its frame (walkgraph)
    cdef list ints            # the function ids as Python ints (the kids' keys)
    cdef dict tables          # id(table list) -> Table

    cdef Table table(self, list table)


@cython.final
cdef class Walker:
    cdef object walk, c, rng, rnd, frames, irq_table
    cdef public object ts       # the task state the walk is in (walk.TaskState)
    cdef Frame fr               # and where in it (flushed to ts by flush())
    cdef int ph
    cdef fakefs_mt_t *mt        # the generator's state, drawn from in C (lib/_mt.pxd)
    cdef Graph g
    cdef Table table
    cdef list tlist             # the task's table list that ``table`` was made from
    cdef int maxd, irqd
    cdef double pirq, ppre, preempt_cut, novelty
    cdef bint remember          # the walk's own run (not one on the side): frames learn
    cdef long cap               # frames made before the walk restarts them (walk.frame_cap)

    cdef inline double draw(self) except? -1.0
    cdef double called(self) except? -1.0
    cdef object child(self, Frame fr, int g)
    cdef void _task(self, ts)
    cdef void flush(self)
    cdef Frame step(self, bint until_switch, bint until_halt, int limit)
