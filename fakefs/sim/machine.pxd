# The machine as an extension type: its per-event methods cpdef, with typed
# locals (an augmenting .pxd: machine.py stays the one source; the fields are
# machine_state.pxd's; docs/data-plane.md "Typed fields").
cimport cython
from fakefs.sim.machine_percpu cimport PerCpu
from fakefs.kernel.sched cimport Scheduler, Task
from fakefs.sim.behaviour cimport TaskRun

cdef class Machine(PerCpu):
    cpdef long long _burst(self, TaskRun r) except? -1
    cpdef long long _sleep(self, TaskRun r) except? -1
    cpdef _set_end(self, int cpu, TaskRun r, t)
    cpdef _void(self, TaskRun r)
    cpdef bint _makes_calls(self, TaskRun r) except -1
    cpdef bint _invents(self, TaskRun r) except -1
    cpdef _call(self, TaskRun r, int cpu, t, call, took, inside=*)
    @cython.locals(task=Task, r=TaskRun)
    cpdef _syscall(self, t, int cpu, token)
    @cython.locals(prev=Task, r=TaskRun, nxt=Task)
    cpdef _switch(self, int cpu, t, prev_state, pick=*)
    @cython.locals(r=TaskRun)
    cpdef _cont(self, t, int cpu, what)
    @cython.locals(sched=Scheduler)
    cpdef _back_to_idle(self, int cpu, t)
    @cython.locals(sched=Scheduler, target_curr=Task, tr=TaskRun)
    cpdef _try_wake(self, TaskRun r, int cpu, t, ctx)
    @cython.locals(sched=Scheduler)
    cpdef _resched(self, t, int cpu)
    cpdef _ipi(self, t, int cpu)
    @cython.locals(r=TaskRun, sched=Scheduler)
    cpdef _wake(self, t, pid)
