# The machine's fields as one C struct (an augmenting .pxd: machine_state.py
# stays the one source; docs/data-plane.md "Typed fields").
from fakefs.kernel.sched cimport Scheduler
from fakefs.sim.alloc_arrivals cimport Arrivals
from fakefs.sim.syscalls cimport Syscalls
from fakefs.kernel.entry_common cimport SyscallEntry

cdef class MachineState:
    cdef public object kernel, life, host_calls, irq, timers, wq, rng, host
    cdef public SyscallEntry entry
    cdef public Syscalls calls
    cdef public object host_behaviour, child_behaviour, devices, heap
    cdef public object process_timeout, sigchld_handler
    cdef public Scheduler sched
    cdef public Arrivals allocs
    cdef public long long tick_ns, ipi_ns, switch_ns, seq, tokens, time
    cdef public list clock, rcu, wheel, begins
    cdef public dict runs, parked
    cdef public set exiting, down_cpus
    cdef public bint frozen

    cpdef _push(self, t, kind, a, b)
    cpdef long long _at(self, int cpu, long long t) except? -1
