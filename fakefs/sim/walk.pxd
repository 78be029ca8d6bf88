# The walk's CPUs and tasks' places as C structs (an augmenting .pxd: walk.py
# stays the one source; docs/data-plane.md "Typed fields").

cdef class TaskState:
    cdef public object task, profile, table, roots, frame
    cdef public int phase, mode
    cdef public double weight
    cdef public bint user


cdef class Cpu:
    cdef public int cpu
    cdef public TaskState ts, idle
    cdef public list rq
    cdef public double idle_weight
    cdef public object halt


cdef class Walk:
    cdef public object kernel, wg, frames, reach, flags, cgraph
    cdef public object frame_cap, restart_frames, _adopted
    cdef public int max_depth
    cdef public double p_irq, p_preempt, novelty
    cdef public bint aside, driven
    cdef public list switch_hooks, cpus
    cdef public dict states

    cpdef follow(self, int cpu, task)
