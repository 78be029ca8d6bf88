"""A task's life: fork, exec, exit (kernel/fork.c, fs/exec.c, kernel/exit.c).

* ``fork``: ``copy_process()`` (``task_newtask``), ``sched_process_fork``,
  ``wake_up_new_task()`` (``sched_wakeup_new``, with the new task queued);
* ``exec``: the comm becomes the program's name (``task_rename``), then
  ``sched_process_exec``;
* ``exit``: ``sched_process_exit``, then ``exit_notify()``: SIGCHLD to the
  parent (``signal_generate``, CLD_EXITED) — the caller wakes the parent and
  switches the zombie out (``prev_state=Z``);
* ``wait``: the parent waits for any child (``sched_process_wait``, pid 0);
* ``deliver_sigchld``: the parent, back on its CPU, takes the signal
  (``signal_deliver``);
* ``delayed_put_task_struct``: the reaped child's task_struct goes an RCU
  grace period later, in the RCU softirq (``sched_process_free``).

Context flags as a stock kernel records them: the fork and exec events in
plain task context (``.....``), ``sched_wakeup_new`` under the rq lock
(``d..2.``), ``signal_generate`` under the sighand lock (``d..2.``),
``signal_deliver`` under it too (``d..1.``), ``sched_process_free`` in the
softirq (``..s..``).
"""

from __future__ import annotations

from .sched import IRQS_OFF, SOFTIRQ

SIGCHLD = 17
CLD_EXITED = 1
CLONE_FLAGS_FORK = 0x1200000          # CLONE_CHILD_SETTID | CLONE_CHILD_CLEARTID | SIGCHLD
SA_RESTORER_RESTART = 0x14000000      # bash's SIGCHLD handler flags
TRACE_SIGNAL_DELIVERED = 0
DEAD_KEPT = 512                       # exited tasks remembered (for their comm)


class Lifecycle:
    def __init__(self, sched, tracepoints):
        self.sched = sched
        tp = tracepoints.get
        self.tp_newtask = tp("task_newtask")
        self.tp_fork = tp("sched_process_fork")
        self.tp_wakeup_new = tp("sched_wakeup_new")
        self.tp_exec = tp("sched_process_exec")
        self.tp_rename = tp("task_rename")
        self.tp_wait = tp("sched_process_wait")
        self.tp_free = tp("sched_process_free")
        self.tp_exit = tp("sched_process_exit")
        self.tp_signal_generate = tp("signal_generate")
        self.tp_signal_deliver = tp("signal_deliver")
        self.parent: dict[int, int] = {}     # child pid -> parent pid
        self.dead: list[int] = []

    def fork(self, parent, cpu: int, t: int, pid: int | None = None, tgid: int | None = None):
        """``parent`` (running on ``cpu``) forks: the child is queued there.
        ``pid``/``tgid``: the child's, when the pid was not allocated here
        (a process of the real machine)."""
        sched = self.sched
        child = sched.spawn(parent.comm, cpu=cpu, prio=parent.prio, pid=pid, tgid=tgid)
        child.policy, child.rt_priority = parent.policy, parent.rt_priority
        child.state = "S"
        self.parent[child.pid] = parent.pid
        if self.tp_newtask.probes:
            self.tp_newtask.fire(cpu, t, parent.pid, sched.flags(cpu, 0), 0,
                                 (child.pid, child.comm, CLONE_FLAGS_FORK, 0))
        if self.tp_fork.probes:
            self.tp_fork.fire(cpu, t, parent.pid, sched.flags(cpu, 0), 0,
                              (parent.comm, parent.pid, child.comm, child.pid))
        sched.enqueue(child, cpu)
        if self.tp_wakeup_new.probes:
            self.tp_wakeup_new.fire(cpu, t, parent.pid, sched.flags(cpu, IRQS_OFF), 2,
                                    (child.comm, child.pid, child.prio, cpu))
        return child

    def exec(self, task, cpu: int, t: int, filename: str) -> None:
        old, task.comm = task.comm, filename.rsplit("/", 1)[-1][:15]
        if self.tp_rename.probes:
            self.tp_rename.fire(cpu, t, task.pid, self.sched.flags(cpu, 0), 0,
                                (task.pid, old, task.comm, 0))
        if self.tp_exec.probes:
            self.tp_exec.fire(cpu, t, task.pid, self.sched.flags(cpu, 0), 0,
                              (filename, task.pid, task.pid))

    def exit(self, task, cpu: int, t: int):
        """``do_exit()`` up to notifying the parent; returns the parent."""
        sched = self.sched
        if self.tp_exit.probes:
            self.tp_exit.fire(cpu, t, task.pid, sched.flags(cpu, 0), 0,
                              (task.comm, task.pid, task.prio))
        parent = sched.tasks.get(self.parent.pop(task.pid, 0))
        if parent is not None and self.tp_signal_generate.probes:
            self.tp_signal_generate.fire(cpu, t, task.pid, sched.flags(cpu, IRQS_OFF), 2,
                                         (SIGCHLD, 0, CLD_EXITED, parent.comm, parent.pid, 1,
                                          TRACE_SIGNAL_DELIVERED))
        self.dead.append(task.pid)
        if len(self.dead) > DEAD_KEPT:
            sched.tasks.pop(self.dead.pop(0), None)
        return parent

    def wait(self, task, cpu: int, t: int) -> None:
        """``do_wait()`` for any child (wait4(-1, ...))."""
        if self.tp_wait.probes:
            self.tp_wait.fire(cpu, t, task.pid, self.sched.flags(cpu, 0), 0,
                              (task.comm, 0, task.prio))

    def delayed_put_task_struct(self, cpu: int, t: int, comm: str, pid: int, prio: int) -> None:
        """The RCU callback freeing a reaped task (runs in the softirq)."""
        if self.tp_free.probes:
            self.tp_free.fire(cpu, t, self.sched.curr[cpu].pid, self.sched.flags(cpu, SOFTIRQ),
                              self.sched.depth(cpu, 0), (comm, pid, prio))

    def deliver_sigchld(self, task, cpu: int, t: int, handler: int) -> None:
        if self.tp_signal_deliver.probes:
            self.tp_signal_deliver.fire(cpu, t, task.pid, self.sched.flags(cpu, IRQS_OFF), 1,
                                        (SIGCHLD, 0, CLD_EXITED, handler, SA_RESTORER_RESTART))
