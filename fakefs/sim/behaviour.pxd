# A task's behaviour and its machine-side state as C structs (an augmenting
# .pxd: behaviour.py stays the one source; docs/data-plane.md "Typed fields").
from fakefs.kernel.sched cimport Task
from fakefs.sim.syscalls cimport CallSpec, ProfileCalls

cdef class Behaviour:
    cdef public long long burst_ns, sleep_ns
    cdef public object state, waker, pool
    cdef public bint cpu_bound
    cdef public double fork
    cdef public list programs


cdef class Device:
    cdef public int irq, softirq
    cdef public object name, chip, hwirq


cdef class TaskRun:
    cdef public Task task
    cdef public Behaviour beh
    cdef public long long left, since, token, parent
    cdef public bint host, sigchld, early, timed_out
    cdef public ProfileCalls calls
    cdef public CallSpec sys
    cdef public object program, tc, sysret, reap, timer, work
    cdef public list startup
