"""Event pid filtering: ``set_event_pid``, ``set_event_notrace_pid``, event-fork
(kernel/trace/trace_events.c).

The kernel decides per CPU, at each context switch, whether the events of
the task switched in are recorded (``ignore_pid``), and lets a wakeup
through when either the waker or the woken task is wanted, and a switch
when either the task leaving or the one coming is.  An entry here carries
the pid of the task running when it was made, and a switch or wakeup its
tasks' pids, so the same decision is taken from the entry:
:meth:`EventPids.ignore`.

With ``options/event-fork`` a listed task's children are listed when it
forks them, and unlisted when they are freed (the kernel's probes on
``sched_process_fork`` and ``sched_process_free``); ``function-fork`` does
the same for ``set_ftrace_pid`` (``FtraceOps.follow_fork``).

The files exist only where the kernel knows the processes that write their
own pids into them (``kernel.host_tasks``): the processes using the mount.
"""

from __future__ import annotations

from ..fs.pseudo import TRACE_MODE_WRITE
from .trace_pid import add_remove_task, ignore_this_task, pids_text, trace_pid_write
from .trace_ref import ArrayFileOps

SWITCH = "sched_switch"
WAKEUPS = frozenset(("sched_waking", "sched_wakeup", "sched_wakeup_new"))
SWITCH_PIDS = (1, 5)          # prev_pid, next_pid in a sched_switch entry's args
WAKEE_PID = 1                 # pid in a wakeup entry's args


class EventPids:
    """One trace array's event pid lists."""

    __slots__ = ("pids", "no_pids")

    def __init__(self):
        self.pids: frozenset | None = None
        self.no_pids: frozenset | None = None

    def active(self) -> bool:
        return self.pids is not None or self.no_pids is not None

    def ignore(self, tracepoint: str, entry) -> bool:
        """Is an entry of ``tracepoint`` left out by the pid lists?"""
        pids, no_pids = self.pids, self.no_pids
        if pids is None and no_pids is None:
            return False
        if tracepoint == SWITCH:
            args = entry[5]
            prev, nxt = args[SWITCH_PIDS[0]], args[SWITCH_PIDS[1]]
            if no_pids is not None and prev in no_pids and nxt in no_pids:
                return True
            return (ignore_this_task(pids, None, prev)
                    and ignore_this_task(pids, None, nxt))
        if not ignore_this_task(pids, no_pids, entry[2]):
            return False
        if tracepoint in WAKEUPS:
            return ignore_this_task(pids, no_pids, entry[5][WAKEE_PID])
        return True

    def write(self, text: str, notrace: bool) -> None:
        if notrace:
            self.no_pids = trace_pid_write(self.no_pids, text)
        else:
            self.pids = trace_pid_write(self.pids, text)

    def clear(self, notrace: bool) -> None:
        if notrace:
            self.no_pids = None
        else:
            self.pids = None

    def text(self, notrace: bool) -> str:
        return pids_text(self.no_pids if notrace else self.pids)

    def follow(self, parent: int | None, pid: int) -> None:
        """A fork by ``parent`` (None: ``pid`` was freed)."""
        self.pids = add_remove_task(self.pids, parent, pid)
        self.no_pids = add_remove_task(self.no_pids, parent, pid)


class EventPidOps(ArrayFileOps):
    """set_event_pid / set_event_notrace_pid (``ftrace_set_event_pid_fops``):
    pids added by each write, O_TRUNC clears, one pid a line."""

    def __init__(self, notrace: bool):
        self.notrace = notrace

    def open(self, f):
        if f.trunc:
            f.data.event_pids.clear(self.notrace)
        super().open(f)

    def show(self, f):
        return f.data.event_pids.text(self.notrace)

    def write(self, f, data):
        if not data:
            return 0
        tr = f.data
        tr.ensure_expanded()               # tracing_update_buffers()
        tr.event_pids.write(data.decode("latin-1"), self.notrace)
        return len(data)


def event_pid_files(tr, d) -> None:
    """The files of ``event_trace_add_tracer()`` after ``events/``."""
    if not tr.kernel.host_tasks:
        return
    f = tr.kernel.tree.create_file
    f("set_event_pid", TRACE_MODE_WRITE, d, tr, EventPidOps(False))
    f("set_event_notrace_pid", TRACE_MODE_WRITE, d, tr, EventPidOps(True))


def follow_fork(tracing, parent: int | None, child: int) -> None:
    """What the fork and free probes do on every array whose event-fork or
    function-fork is set: ``child`` joins the pid lists ``parent`` is on
    (None: ``child`` was freed and leaves them).  A fork the machine only
    notes (nothing saw it happen) still does this: the probe runs on every
    fork, traced or not."""
    for tr in tracing.arrays():
        if tr.flag("event-fork"):
            tr.event_pids.follow(parent, child)
        if tr.flag("function-fork") and tr.ftrace is not None:
            tr.ftrace.follow_fork(parent, child)


def register_pid_follow(tracing) -> None:
    """The probes that follow forks and frees for event-fork and
    function-fork, on every array whose option is set."""
    tps = tracing.kernel.tracepoints

    def on_fork(cpu, ts, pid, flags, pc, args):
        follow_fork(tracing, args[1], args[3])

    def on_free(cpu, ts, pid, flags, pc, args):
        follow_fork(tracing, None, args[1])

    tps.get("sched_process_fork").register(on_fork)
    tps.get("sched_process_free").register(on_free)
