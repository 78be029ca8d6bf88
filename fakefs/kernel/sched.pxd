# The scheduler's tasks and runqueues as C structs (an augmenting .pxd: sched.py
# stays the one source and runs as Python too; docs/data-plane.md "Typed fields").
cimport cython
from fakefs.kernel.tracepoint cimport Tracepoint

cdef class Task:
    cdef public long long pid, tgid
    cdef public object comm, allowed, state, mm
    cdef public int prio, cpu, policy, rt_priority
    cdef public bint kthread, bound, on_cpu
    cdef public long long slice_end, exec_start, sum_exec_runtime


cdef class Scheduler:
    cdef public int nr_cpus
    cdef public dict tasks
    cdef public list idle, curr, rq, need_resched, idling, online, switch_hooks
    cdef public list history, halts
    cdef public long long next_pid, slice_ns
    cdef public object pid_in_use, pid_floor
    cdef public Tracepoint tp_sched_switch, tp_sched_waking, tp_sched_wakeup
    cdef public Tracepoint tp_sched_migrate_task, tp_cpu_idle, tp_sched_stat_runtime

    cpdef find(self, pid)
    cpdef flags(self, int cpu, base)
    cpdef depth(self, int cpu, pc)
    cpdef fire(self, Tracepoint tp, int cpu, t, base, pc, args)
    cpdef enqueue(self, Task task, int cpu)
    @cython.locals(prev=Task, nxt=Task, x=Task, q=list)
    cpdef Task schedule(self, int cpu, ts, prev_state=*, pick=*)
    @cython.locals(h=list)
    cpdef _halt(self, int cpu, ts, int state)
    @cython.locals(prev=cython.int)
    cpdef int select_task_rq(self, Task task) except -1
    @cython.locals(waker=Task)
    cpdef try_to_wake_up(self, Task task, int cpu, ts, ctx=*, preempt=*)
    cpdef idle_enter(self, int cpu, ts)
    cpdef idle_exit(self, int cpu, ts)
    cpdef update_curr(self, int cpu, Task task, ts, int where, flags, pc)
    @cython.locals(curr=Task)
    cpdef scheduler_tick(self, int cpu, ts)
