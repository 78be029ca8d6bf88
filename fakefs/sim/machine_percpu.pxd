# A part of the machine's chain of extension types (docs/data-plane.md "Typed fields").
from fakefs.sim.machine_host cimport HostQueue
from fakefs.sim.behaviour cimport TaskRun

cdef class PerCpu(HostQueue):
    cpdef _tick(self, t, int cpu)
    cpdef _wheel_sleep(self, TaskRun r, int cpu, t, sleep, armed=*)
    cpdef _wheel_wake(self, t, int cpu, TaskRun r, due, rcu)
    cpdef int _live(self, int cpu) except -1
