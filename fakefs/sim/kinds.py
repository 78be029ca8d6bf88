"""The kinds of the machine's queued events (``Machine.heap``: (t, seq, kind, a, b)).

``a`` is the CPU, but for a wakeup (the pid) and a real process's event
(``host.HOST``, 7).  A ``_CONT`` goes on with ``b`` = (pid, how, ...): how
the wakeup happens (a softirq vector, or one of the negative values).
"""

_END, _WAKE, _RESCHED, _TICK, _IPI, _CONT, _SYSCALL = 0, 1, 2, 3, 4, 5, 6
_DOWN, _UP = 9, 10         # CPU hotplug: a CPU dies, comes back (machine_percpu.py)
# the allocation workload's (alloc_arrivals.py): a running task's next
# operation (b: its token), what is due (b: the due event's number)
_ALLOC, _ALLOC_DUE = 11, 12
_TIMER_WAKE = -1           # a _CONT in an hrtimer (else: the softirq vector)
_WHEEL_WAKE = -2           # a _CONT in a wheel timer's function
_EXIT_WAKE = -3            # a _CONT in an exiting task's exit_notify()
