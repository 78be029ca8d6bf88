"""The timer interrupt as the kernel profiler sees it: every online CPU
ticks at ``CONFIG_HZ``, and each tick finds the CPU somewhere
(``Profiler.tick``, kernel/profile.c's ``profile_tick()``).

Where is the machine's: the call-graph walk says what each CPU runs (a few
traced calls further on each tick, ``WALK_PER_TICK``: the walk is in calls,
not time).  An idle CPU is in its idle loop's halt instruction, and with
tickless idle (``CONFIG_NO_HZ``/``CONFIG_NO_HZ_IDLE``) takes few ticks; a
user task's tick lands in user mode about half the time (the profiler
counts none of those); a kernel one at a hot instruction of the function
it is in (``Profiler.pc_in``).  With ``profile=schedule`` the ticks only
move the walk on: the scheduler's hits come from its switches.

A skipped stretch samples a few ticks a CPU and weighs them up.  The draws
are the profiler's RNG's (``profile``), so a seed gives the same buffer.
"""

from __future__ import annotations

from ..kernel.profile import CPU_PROFILING, SCHED_PROFILING

# Share of a user task's ticks that land in user mode (not counted).
USER_MODE_SHARE = 0.55
# Share of ticks an idle CPU still takes with tickless idle.
NOHZ_IDLE_TICK_SHARE = 0.08
# Traced calls the workload walk advances per tick and CPU (the walk is in
# calls, not time: a few per tick keep CPUs moving between idle and tasks
# at a cost of microseconds).
WALK_PER_TICK = 3
# At most this many ticks per CPU are sampled for a skipped interval.
SKIP_SAMPLES = 32


class ProfileTicks:
    """The machine's timer ticks for ``kernel.profile``."""

    __slots__ = ("kernel", "profile", "ticks")

    def __init__(self, kernel):
        self.kernel = kernel
        self.profile = kernel.profile
        self.ticks = 0              # ticks of every CPU so far, while profiling

    def _tick_count(self, t0: int, t1: int) -> int:
        period = 1_000_000_000 // self.profile.hz
        return t1 // period - t0 // period

    def run(self, t0: int, t1: int) -> None:
        """The ticks in [t0, t1) (a timer hook)."""
        p = self.profile
        if not p.prof_on or p.buffer is None:
            return
        n = self._tick_count(t0, t1)
        if n <= 0:
            return
        if p.prof_on == CPU_PROFILING:
            online = self.kernel.sched.online      # (an offline CPU has no tick)
            for _ in range(n):
                for cpu in range(self.kernel.nr_cpus):
                    if online[cpu]:
                        self._cpu_tick(cpu, 1)
        elif p.prof_on == SCHED_PROFILING:
            wl = self.kernel.workload
            if wl is None:
                return
            for _ in range(n * WALK_PER_TICK):
                for cpu in range(self.kernel.nr_cpus):
                    wl.sample(p.rng, cpu)
        self.ticks += n

    def skip(self, t0: int, t1: int) -> None:
        """An unobserved stretch: sample a few ticks, weight them up."""
        p = self.profile
        if p.prof_on != CPU_PROFILING or p.buffer is None:
            return
        n = self._tick_count(t0, t1)
        if n <= 0:
            return
        k = min(n, SKIP_SAMPLES)
        online = self.kernel.sched.online
        for cpu in range(self.kernel.nr_cpus):
            if not online[cpu]:
                continue
            for i in range(k):
                self._cpu_tick(cpu, n // k + (1 if i < n % k else 0))
        self.ticks += n

    def _cpu_tick(self, cpu: int, weight: int) -> None:
        """A tick of ``cpu``: where was it?"""
        p = self.profile
        wl = self.kernel.workload
        rng = p.rng
        if wl is None:
            p.tick(p.halt_pc(), weight=weight)
            return
        for _ in range(WALK_PER_TICK):
            task, stack = wl.sample(rng, cpu)
        if task.pid == 0:
            if p.nohz and rng.random() >= NOHZ_IDLE_TICK_SHARE:
                return                            # no tick: the CPU sleeps through it
            p.tick(p.halt_pc(), weight=weight)
            return
        if not task.kthread and rng.random() < USER_MODE_SHARE:
            p.tick(None, user_mode=True, weight=weight)
            return
        if stack:
            p.tick(p.pc_in(stack[0], rng), weight=weight)


def start(kernel) -> ProfileTicks | None:
    """The ticks, from now on, of a kernel with the profiler (they count
    while profiling is on: at boot with ``profile=``, or from a write of
    ``/sys/kernel/profiling``)."""
    if kernel.profile is None:
        return None
    ticks = ProfileTicks(kernel)
    kernel.add_timer_hook(ticks.run, skip=ticks.skip)
    return ticks
