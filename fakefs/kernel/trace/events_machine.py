"""Printing the events only the machine's kernel paths fire: interrupts,
timers, idle, IPIs, migration and a task's life (include/trace/events/irq.h,
timer.h, power.h, ipi.h, sched.h, task.h, signal.h and
arch/x86/include/asm/trace/irq_vectors.h).

Their formats, ids and sizes are the catalogue's; these classes say how a
record the kernel paths (``kernel/irq.py``, ``kernel/sched.py``,
``kernel/fork.py``) fill is printed.  Arguments come in the order of the
event's fields.
"""

from __future__ import annotations

from ..timer import TIMER_CPUMASK, TIMER_ARRAYSHIFT, timer_flags_text
from ..mm.kmem_trace import STRUCT_PAGE_SIZE, VMEMMAP
from .events_defs import EventDef, show_gfp

SOFTIRQ_NAMES = ("HI", "TIMER", "NET_TX", "NET_RX", "BLOCK", "IRQ_POLL", "TASKLET", "SCHED",
                 "HRTIMER", "RCU")
HRTIMER_MODES = {0: "ABS", 1: "REL", 2: "ABS|PINNED", 3: "REL|PINNED", 4: "ABS|SOFT",
                 5: "REL|SOFT", 6: "ABS|PINNED|SOFT", 7: "REL|PINNED|SOFT", 8: "ABS|HARD",
                 9: "REL|HARD", 10: "ABS|PINNED|HARD", 11: "REL|PINNED|HARD"}


class MachineEvent(EventDef):
    """An event only the machine's code paths fire (no rate of its own)."""


def _sym_or_null(fmt, ip, offset):
    return fmt.sym(ip, offset, False) if ip else "0x0"


class IrqHandlerEntry(MachineEvent):
    def render(self, a, fmt):
        return "irq=%d name=%s" % a


class IrqHandlerExit(MachineEvent):
    def render(self, a, fmt):
        return "irq=%d ret=%s" % (a[0], "handled" if a[1] else "unhandled")


class Softirq(MachineEvent):
    def render(self, a, fmt):
        vec = a[0]
        name = SOFTIRQ_NAMES[vec] if vec < len(SOFTIRQ_NAMES) else "0x%x" % vec
        return "vec=%u [action=%s]" % (vec, name)


class Vector(MachineEvent):
    def render(self, a, fmt):
        return "vector=%d" % a


class HrtimerExpireEntry(MachineEvent):
    def render(self, a, fmt):
        timer, now, fn = a
        return "hrtimer=%s function=%s now=%d" % (fmt.ptr(timer), _sym_or_null(fmt, fn, False),
                                                   now)


class HrtimerExpireExit(MachineEvent):
    """hrtimer_expire_exit / hrtimer_cancel."""

    def render(self, a, fmt):
        return "hrtimer=%s" % fmt.ptr(a[0])


CLOCKIDS = {0: "CLOCK_REALTIME", 1: "CLOCK_MONOTONIC", 7: "CLOCK_BOOTTIME", 11: "CLOCK_TAI"}


class HrtimerInit(MachineEvent):
    def render(self, a, fmt):
        timer, clockid, mode = a
        return "hrtimer=%s clockid=%s mode=%s" % (
            fmt.ptr(timer), CLOCKIDS.get(clockid, "0x%x" % clockid),
            HRTIMER_MODES.get(mode, "0x%x" % mode))


class HrtimerStart(MachineEvent):
    def render(self, a, fmt):
        timer, fn, expires, soft, mode, armed = a
        return ("hrtimer=%s function=%s expires=%d softexpires=%d mode=%s was_armed=%d"
                % (fmt.ptr(timer), _sym_or_null(fmt, fn, False), expires, soft,
                   HRTIMER_MODES.get(mode, "0x%x" % mode), armed))


class TimerPtr(MachineEvent):
    """timer_init / timer_cancel / timer_expire_exit."""

    def render(self, a, fmt):
        return "timer=%s" % fmt.ptr(a[0])


class TimerStart(MachineEvent):
    def render(self, a, fmt):
        timer, fn, expires, bucket, now, flags = a
        return ("timer=%s function=%s expires=%d [timeout=%d] bucket_expiry=%d cpu=%d idx=%d "
                "flags=%s" % (fmt.ptr(timer), _sym_or_null(fmt, fn, False), expires,
                              expires - now, bucket, flags & TIMER_CPUMASK,
                              flags >> TIMER_ARRAYSHIFT, timer_flags_text(flags)))


class TimerExpireEntry(MachineEvent):
    def render(self, a, fmt):
        timer, now, fn, baseclk = a
        return "timer=%s function=%s now=%d baseclk=%d" % (
            fmt.ptr(timer), _sym_or_null(fmt, fn, False), now, baseclk)


class WorkqueueQueueWork(MachineEvent):
    def render(self, a, fmt):
        work, fn, wq, req_cpu, cpu = a
        return "work struct=%s function=%s workqueue=%s req_cpu=%d cpu=%d" % (
            fmt.ptr(work), _sym_or_null(fmt, fn, False), wq, req_cpu, cpu)


class WorkqueueActivateWork(MachineEvent):
    def render(self, a, fmt):
        return "work struct %s function=%s " % (fmt.ptr(a[0]), _sym_or_null(fmt, a[1], False))


class WorkqueueExecute(MachineEvent):
    def render(self, a, fmt):
        return "work struct %s: function %s" % (fmt.ptr(a[0]), _sym_or_null(fmt, a[1], False))


def _page(fmt, pfn):
    return fmt.ptr(VMEMMAP + pfn * STRUCT_PAGE_SIZE)


class MmPageAlloc(MachineEvent):
    def render(self, a, fmt):
        pfn, order, gfp, mt = a
        return "page=%s pfn=0x%x order=%d migratetype=%d gfp_flags=%s" % (
            _page(fmt, pfn), pfn, order, mt, show_gfp(gfp))


class MmPageFree(MachineEvent):
    def render(self, a, fmt):
        return "page=%s pfn=0x%x order=%d" % (_page(fmt, a[0]), a[0], a[1])


class CpuIdle(MachineEvent):
    def render(self, a, fmt):
        return "state=%d cpu_id=%d" % a


class IpiSendCpu(MachineEvent):
    def render(self, a, fmt):
        cpu, site, callback = a
        return "cpu=%u callsite=%s callback=%s" % (cpu, _sym_or_null(fmt, site, True),
                                                   _sym_or_null(fmt, callback, True))


class SchedMigrateTask(MachineEvent):
    def render(self, a, fmt):
        return "comm=%s pid=%d prio=%d orig_cpu=%d dest_cpu=%d" % a


class SchedProcessFork(MachineEvent):
    def render(self, a, fmt):
        return "comm=%s pid=%d child_comm=%s child_pid=%d" % a


class SchedProcessExec(MachineEvent):
    def render(self, a, fmt):
        return "filename=%s pid=%d old_pid=%d" % a


class SchedProcess(MachineEvent):
    """sched_process_exit / free / wait: comm, pid, prio."""

    def render(self, a, fmt):
        return "comm=%s pid=%d prio=%d" % a


class SchedStatRuntime(MachineEvent):
    def render(self, a, fmt):
        return "comm=%s pid=%d runtime=%d [ns]" % a


class TaskRename(MachineEvent):
    def render(self, a, fmt):
        return "pid=%d oldcomm=%s newcomm=%s oom_score_adj=%d" % a


class SchedWakeupNew(MachineEvent):
    def render(self, a, fmt):
        return "comm=%s pid=%d prio=%d target_cpu=%03d" % a


class TaskNewtask(MachineEvent):
    def render(self, a, fmt):
        return "pid=%d comm=%s clone_flags=%x oom_score_adj=%d" % a


class SignalDeliver(MachineEvent):
    def render(self, a, fmt):
        return "sig=%d errno=%d code=%d sa_handler=%x sa_flags=%x" % a


def machine_events() -> list[EventDef]:
    """The events above, with placeholders the catalogue fills in."""
    table = [
        ("irq", "irq_handler_entry", IrqHandlerEntry), ("irq", "irq_handler_exit", IrqHandlerExit),
        ("irq", "softirq_raise", Softirq), ("irq", "softirq_entry", Softirq),
        ("irq", "softirq_exit", Softirq),
        ("irq_vectors", "local_timer_entry", Vector), ("irq_vectors", "local_timer_exit", Vector),
        ("irq_vectors", "reschedule_entry", Vector), ("irq_vectors", "reschedule_exit", Vector),
        ("timer", "hrtimer_expire_entry", HrtimerExpireEntry),
        ("timer", "hrtimer_expire_exit", HrtimerExpireExit),
        ("timer", "hrtimer_init", HrtimerInit), ("timer", "hrtimer_start", HrtimerStart),
        ("timer", "hrtimer_cancel", HrtimerExpireExit),
        ("timer", "timer_init", TimerPtr), ("timer", "timer_start", TimerStart),
        ("timer", "timer_cancel", TimerPtr), ("timer", "timer_expire_entry", TimerExpireEntry),
        ("timer", "timer_expire_exit", TimerPtr),
        ("workqueue", "workqueue_queue_work", WorkqueueQueueWork),
        ("workqueue", "workqueue_activate_work", WorkqueueActivateWork),
        ("workqueue", "workqueue_execute_start", WorkqueueExecute),
        ("workqueue", "workqueue_execute_end", WorkqueueExecute),
        ("power", "cpu_idle", CpuIdle), ("ipi", "ipi_send_cpu", IpiSendCpu),
        ("sched", "sched_migrate_task", SchedMigrateTask),
        ("sched", "sched_process_fork", SchedProcessFork),
        ("sched", "sched_process_exec", SchedProcessExec),
        ("sched", "sched_process_exit", SchedProcess),
        ("sched", "sched_process_wait", SchedProcess),
        ("sched", "sched_process_free", SchedProcess),
        ("sched", "sched_stat_runtime", SchedStatRuntime),
        ("task", "task_rename", TaskRename),
        ("kmem", "mm_page_alloc", MmPageAlloc), ("kmem", "mm_page_free", MmPageFree),
        ("sched", "sched_wakeup_new", SchedWakeupNew),
        ("task", "task_newtask", TaskNewtask), ("signal", "signal_deliver", SignalDeliver),
    ]
    kinds = {"mm_page_alloc": "page_alloc",      # where the walk finds their stacks
             "sched_process_fork": "sched_process_fork",
             "sched_process_exec": "sched_process_exec",
             "sched_process_exit": "sched_process_exit"}
    return [cls(system, name, [], "", 0, kinds.get(name)) for system, name, cls in table]
