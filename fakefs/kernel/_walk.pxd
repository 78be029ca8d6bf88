# The compiled walk's frame and pick tables, as other compiled modules read
# them (_walk.pyx).

cdef class Frame:
    cdef public int fn
    cdef public Frame parent
    # the function's entry ip, and (with a parent) the return address into
    # the parent: the stack (entry ip,) + the return addresses below is made
    # from them the first time it is asked for (``stack``)
    cdef public unsigned long long entry, site
    cdef tuple _stack
    cdef object owner             # the Frames that made it (interns stacks)
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

    cdef tuple make_stack(self)


cdef class Table:
    cdef int nf
    cdef int *off
    cdef int *callee
    cdef double *cum
    cdef double *total
    cdef char *has
    cdef object source       # the list it was made from (kept alive: keyed by id)
