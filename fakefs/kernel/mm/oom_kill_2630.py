"""The OOM killer of Linux 2.6.30 (mm/oom_kill.c).

``out_of_memory()`` picks the task with the highest ``badness()`` score,
sets TIF_MEMDIE on it (access to the no-watermark reserves while it exits)
and sends SIGKILL.  While a victim with TIF_MEMDIE has not exited, no other
task is chosen: callers just sleep a jiffy and retry, which is what lets a
concurrent allocator catch the victim's freed memory at the high watermark.

The score of this era: the mm's ``total_vm`` (plus half of each child's),
divided by the square root of the CPU time and the fourth root of the run
time, doubled for niced tasks, quartered for root (CAP_SYS_ADMIN) and again
for CAP_SYS_RAWIO, then shifted by ``oomkilladj``.
"""

from __future__ import annotations

import math

from .page_alloc_2630 import PF_EXITING, MmTask, PageAllocator

OOM_DISABLE = -17
SHIFT_HZ = {100: 7, 250: 8, 300: 8, 1000: 10}


def _isqrt(n: int) -> int:
    return math.isqrt(max(0, n))


class OomKiller:
    def __init__(self, pa: PageAllocator, tasks, hz: int = 250, printk=None):
        """``tasks()`` returns the live tasks (``for_each_process``)."""
        self.pa = pa
        pa.oom = self
        self.tasks = tasks
        self.hz = hz
        self.printk = printk or (lambda text, level=6: None)
        self.nr_kills = 0
        self.exit_delay = 2        # jiffies from SIGKILL to exit_mm()
        self.on_kill = None        # callback(victim) so the owner schedules the exit
        self.init_task = None      # is_global_init()

    def badness(self, p: MmTask, uptime_jiffies: int) -> int:
        points = p.total_vm
        if not points:
            return 0
        for c in self.children(p):
            points += c.total_vm // 2 + 1
        cpu_time = p.utime >> (SHIFT_HZ.get(self.hz, 8) + 3)
        run_time = ((uptime_jiffies - p.start_jiffy) // self.hz) >> 10
        if cpu_time:
            points //= max(1, _isqrt(cpu_time))
        if run_time:
            points //= max(1, _isqrt(_isqrt(run_time)))
        if p.nice > 0:
            points *= 2
        if p.uid == 0:            # CAP_SYS_ADMIN / CAP_SYS_RESOURCE
            points //= 4
        if p.uid == 0:            # CAP_SYS_RAWIO
            points //= 4
        if p.oomkilladj:
            if p.oomkilladj > 0:
                points = max(points, 1) << p.oomkilladj
            else:
                points >>= -p.oomkilladj
        return points

    def children(self, p: MmTask):
        return [c for c in self.tasks() if c.parent is p and c.alive]

    def select_bad_process(self, current: MmTask):
        """Returns (task, points), (None, 0) or ("abort", 0) when a victim
        is still on its way out."""
        chosen, best = None, 0
        now = self.pa.jiffies
        for p in self.tasks():
            if not p.alive or not p.has_mm or p is self.init_task:
                continue
            if p.memdie:
                return "abort", 0
            if p.flags & PF_EXITING:
                if p is not current:
                    return "abort", 0
                return p, (1 << 64) - 1
            if p.oomkilladj == OOM_DISABLE:
                continue
            points = self.badness(p, now)
            if points > best or chosen is None:
                chosen, best = p, points
        return chosen, best

    def out_of_memory(self, zonelist, gfp: int, order: int, current: MmTask) -> None:
        p, points = self.select_bad_process(current)
        if p == "abort":
            return
        if p is None:
            self.printk("Out of memory and no killable processes...", 0)
            return
        self.oom_kill_process(p, gfp, order, points, current, "Out of memory")

    def oom_kill_process(self, p: MmTask, gfp: int, order: int, points: int,
                         current: MmTask, message: str) -> None:
        if self.pa.printk_ratelimit():
            self.printk("%s invoked oom-killer: gfp_mask=0x%x, order=%d, oomkilladj=%d"
                        % (current.comm, gfp, order, current.oomkilladj), 4)
        if p.flags & PF_EXITING:
            self._kill(p, verbose=False)
            return
        self.printk("%s: kill process %d (%s) score %d or a child"
                    % (message, p.pid, p.comm, points), 3)
        for c in self.children(p):
            if c.total_vm and c.oomkilladj != OOM_DISABLE:
                self._kill(c, verbose=True)
                return
        self._kill(p, verbose=True)

    def _kill(self, p: MmTask, verbose: bool) -> None:
        if not p.total_vm:
            return
        if verbose:
            self.printk("Killed process %d (%s)" % (p.pid, p.comm), 3)
        p.memdie = True
        if p.exit_at is None:
            p.exit_at = self.pa.jiffies + self.exit_delay
        self.nr_kills += 1
        if self.on_kill is not None:
            self.on_kill(p)
