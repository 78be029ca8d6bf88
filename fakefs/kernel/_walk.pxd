# The compiled walk's frame and pick tables, as other compiled modules read
# them (_walk.pyx).

cdef class Frame:
    cdef public int fn
    cdef public Frame parent
    # (entry ip,) + the return addresses below this function
    cdef public tuple stack
    cdef public dict kids
    cdef public int depth
    cdef public bint irq          # inside an interrupt
    cdef public object tp         # stack as seen by a tracepoint in fn
    cdef public int mode          # entered from user mode, in a kthread, idle
    # what a function tracer's entry of a call here records besides its
    # time and task (context flags, preempt depth, ip, parent ip): see
    # TraceActivity.call_fields()
    cdef public tuple call
    # its context as the frames up from it say it (-1: not known yet): see
    # TraceActivity.frame_flags()
    cdef public int ctx


cdef class Table:
    cdef int nf
    cdef int *off
    cdef int *callee
    cdef double *cum
    cdef double *total
    cdef char *has
    cdef object source       # the list it was made from (kept alive: keyed by id)
