"""sim/profile_ticks.py: the machine's timer ticks, as the kernel profiler
counts them (Profiler.tick is profile_tick())."""

from fakefs import sim
from fakefs.kernel.init import Kernel
from fakefs.kernel.profile import CPU_PROFILING
from fakefs.sim.clock import ManualClock
from fakefs.sim.timekeeper import GAP_NS

SEC = 1_000_000_000
# no call graph: every CPU idles, each tick is at the idle loop's halt (and
# counts: without a walk there is no tickless idle to skip ticks)
IDLE = [("fakefs.kernel.kallsyms", "kallsyms_init"), ("fakefs.kernel.fs.proc.base", "proc_root_init"),
        ("fakefs.kernel.profile", "profile_init"), ("fakefs.kernel.fs.proc.profile", "proc_profile_init")]


def boot(cmdline: str, nr_cpus: int = 2):
    k = Kernel(cmdline=cmdline, seed=1, nr_cpus=nr_cpus, clock=ManualClock(), host_kallsyms=False)
    return sim.boot_kernel(k, IDLE)


def hits(k) -> int:
    return sum(k.profile.buffer)


def test_a_kernel_tick_hits_its_pc_a_user_one_nothing():
    k = boot("profile=2")
    p = k.profile
    pc = p.halt_pc()
    p.tick(pc)
    p.tick(pc, user_mode=True)
    p.tick(pc, weight=3)
    p.tick(None)
    assert hits(k) == 4 and p.buffer[(pc - p.stext) >> p.shift] == 4


def test_every_online_cpu_ticks_at_hz():
    k = boot("profile=2")
    k.clock.advance(SEC)
    k.timekeeper.run_until_now()
    assert hits(k) == 2 * k.profile.hz
    assert k.profile.prof_on == CPU_PROFILING


def test_a_skipped_stretch_counts_the_ticks_it_samples_weighed_up():
    k = boot("profile=2")
    k.clock.advance(GAP_NS + 3 * SEC)          # a gap: most of it skipped
    k.timekeeper.run_until_now()
    assert hits(k) == 2 * k.profile.hz * (GAP_NS + 3 * SEC) // SEC


def test_ticks_count_from_profiling_turned_on_at_run_time():
    """The ticks run from the machine's start; before /sys/kernel/profiling
    turns profiling on there is nothing to count, after it every tick."""
    from fakefs.sim.files import write_file
    k = boot("")
    k.clock.advance(SEC)
    k.timekeeper.run_until_now()
    assert k.profile.buffer is None                      # off: no buffer, no hits
    write_file(k, "sys/kernel/profiling", b"2\n")
    k.clock.advance(SEC)
    k.timekeeper.run_until_now()
    assert hits(k) == 2 * k.profile.hz                   # that second's ticks only
