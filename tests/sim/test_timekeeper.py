"""sim/timekeeper.py: what moves a kernel through time, on a kernel with
nothing but the hooks a test gives it."""

from fakefs import sim
from fakefs.kernel.init import Kernel
from fakefs.sim.clock import ManualClock
from fakefs.sim.timekeeper import GAP_NS, GAP_WINDOW_NS, STEP_NS, TICK_NS

MS = 1_000_000


def bare():
    """A kernel of no subsystem, its time kept, and what its hooks saw."""
    k = sim.keep_time(Kernel(seed=1, nr_cpus=1, clock=ManualClock(), host_kallsyms=False).boot([]))
    seen = []
    k.add_timer_hook(lambda t0, t1: seen.append(("step", t0, t1)),
                     skip=lambda t0, t1: seen.append(("skip", t0, t1)))
    k.add_timer_hook(lambda t0, t1: seen.append(("observed", t0, t1)), observer=True)
    return k, seen


def test_one_timekeeper_a_kernel():
    k, _ = bare()
    tk = k.timekeeper
    assert tk is not None and sim.keep_time(k) is k and k.timekeeper is tk


def test_a_catch_up_steps_the_hooks_to_the_tick_of_now():
    k, seen = bare()
    k.clock.advance(45 * MS + 300)
    assert k.timekeeper.catch_up(1) is True                 # more to do after one step
    while k.timekeeper.catch_up(1):
        pass
    assert k.sim_time == 45 * MS - 45 * MS % TICK_NS        # whole ticks: the rest waits
    steps = [s for s in seen if s[0] == "step"]
    assert steps[0][1] == 0 and steps[-1][2] == 45 * MS
    assert all(b - a <= STEP_NS for _, a, b in steps)
    assert all(steps[i][2] == steps[i + 1][1] for i in range(len(steps) - 1))
    # each step's observers after its timer hooks
    assert [s[0] for s in seen] == ["step", "observed"] * len(steps)


def test_a_long_stretch_is_a_gap_whose_last_window_is_simulated():
    k, seen = bare()
    k.clock.advance(GAP_NS + 500 * MS)
    k.timekeeper.run_until_now()
    skips = [s for s in seen if s[0] == "skip"]
    steps = [s for s in seen if s[0] == "step"]
    assert skips == [("skip", 0, GAP_NS + 500 * MS - GAP_WINDOW_NS)]
    assert steps[0][1] == skips[0][2] and steps[-1][2] == GAP_NS + 500 * MS
    assert k.timekeeper.gap is None                         # ended where it was meant to


def test_advance_to_goes_to_the_instant_itself():
    k, seen = bare()
    k.timekeeper.advance_to(3 * MS + 17)
    assert k.sim_time == 3 * MS + 17 and seen[-2] == ("step", 0, 3 * MS + 17)


def test_the_kernel_is_at_a_steps_start_while_it_runs_and_at_the_callers_instant_after():
    k, _ = bare()
    stamps = []
    k.add_timer_hook(lambda t0, t1: (stamps.append((t0, k.now)), k.printk("tick")))
    k.clock.advance(45 * MS + 300)
    k.timekeeper.run_until_now()               # a request came (the adapter, sim.files)
    assert stamps and all(t0 == now for t0, now in stamps)
    assert [r.ts for r in k.log.records if r.text == "tick"] == [t0 for t0, _ in stamps]
    assert k.now == 45 * MS + 300              # the request's, not the tick it caught up to
    k.clock.advance(10 * MS)
    while k.timekeeper.catch_up(1):            # (the runner: no request)
        pass
    assert k.now == k.sim_time == 55 * MS
    k.timekeeper.run_until_now()               # a caller's: its instant
    assert k.now == 55 * MS + 300


def test_the_machine_runs_from_the_instant_the_kernel_booted():
    k = Kernel(seed=1, nr_cpus=1, clock=ManualClock(7 * MS), host_kallsyms=False).boot([])
    sim.keep_time(k)
    assert k.sim_time == k.now == 7 * MS
