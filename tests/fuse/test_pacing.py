"""The catch-up's steps sized to what they cost (fuse/pacing.py)."""

from fakefs.fuse import pacing
from fakefs.sim.timekeeper import STEP_NS
from fakefs.sim.clock import Clock, ManualClock


class Costly:
    """A kernel whose steps cost ``per_ms`` seconds of work per simulated
    ms; ``boundary``: where a gap's window begins; ``skip_to``: the next
    step skips to there."""

    def __init__(self, now, per_ms):
        self.now = now
        self.per_ms = per_ms
        self.steps = []
        self.sim_time = 0
        self.boundary = None
        self.skip_to = None
        self.gap = None               # no gap under way
        self.timekeeper = self        # (it moves itself: a fake)

    def next_boundary(self):
        return self.boundary if self.boundary is not None and self.boundary > self.sim_time else None

    def catch_up(self, max_steps=8, until=None, step_ns=STEP_NS):
        self.steps.append(step_ns)
        if self.skip_to is not None:
            self.sim_time, self.skip_to = self.skip_to, None
            return True
        self.now[0] += self.per_ms * step_ns / 1e6
        self.sim_time += step_ns
        return True


def test_steps_shrink_to_the_wall_time_and_grow_back(monkeypatch):
    now = [0.0]
    monkeypatch.setattr(pacing.time, "perf_counter", lambda: now[0])
    p = pacing.Pacer(Clock())
    k = Costly(now, per_ms=0.02)              # everything on: 20 ms of work a simulated ms
    for _ in range(20):
        assert p.step(k, 0)
    assert k.steps[0] == pacing.MIN_STEP_NS   # the first step is a small one
    want = pacing.STEP_WALL_S / 0.02 * 1e6    # what takes STEP_WALL_S: 0.1 ms
    assert max(k.steps[-5:]) <= max(pacing.MIN_STEP_NS, want * 2)
    k.per_ms = 0.00001                        # nothing traced: cheap
    for _ in range(20):
        p.step(k, 0)
    assert k.steps[-1] == STEP_NS


def test_a_step_ends_where_the_gaps_window_begins_and_the_next_starts_small(monkeypatch):
    """Quiet steps before a gap's window grow; the window costs far more a
    simulated ms: the step that reaches it stops there, and the pacer
    starts again from MIN_STEP_NS, as after a skip."""
    now = [0.0]
    monkeypatch.setattr(pacing.time, "perf_counter", lambda: now[0])
    p = pacing.Pacer(Clock())
    k = Costly(now, per_ms=0.00001)
    k.skip_to = 5_000_000_000                 # a skip
    p.step(k, 0)
    assert p.step_ns == pacing.MIN_STEP_NS
    k.boundary = k.sim_time + 60_000_000      # the window, 60 ms on
    n = len(k.steps)
    while k.sim_time < k.boundary:            # quiet: the steps grow
        p.step(k, 0)
    quiet = k.steps[n:]
    assert k.sim_time == k.boundary           # the last one stopped at the window
    assert max(quiet) == STEP_NS and quiet[-1] < STEP_NS
    assert p.step_ns == pacing.MIN_STEP_NS
    k.per_ms = 0.02
    p.step(k, 0)
    assert k.steps[-1] == pacing.MIN_STEP_NS  # the window's first step: small


def test_no_pacing_on_a_manual_clock(monkeypatch):
    """``--clock virtual``: the same commands give the same files, so the
    steps are the kernel's own whatever they cost."""
    now = [0.0]
    monkeypatch.setattr(pacing.time, "perf_counter", lambda: now[0])
    p = pacing.Pacer(ManualClock())
    k = Costly(now, per_ms=0.005)
    for _ in range(5):
        p.step(k, 0)
    assert k.steps == [STEP_NS] * 5


class Settling:
    """A kernel that records how far it is told to go."""

    def __init__(self, sim_time):
        self.sim_time = sim_time
        self.advanced = []
        self.timekeeper = self        # (it moves itself: a fake)

    def advance_to(self, t):
        self.advanced.append(t)
        self.sim_time = t


def test_a_request_waits_only_for_the_real_processes_before_it():
    """The followed processes' events are done before a request is served,
    up to SETTLE_NS past its instant; a later instant (events taken while
    it waited) is left for the requests that came after it."""
    SETTLE = pacing.SETTLE_NS
    k = Settling(1000)
    assert pacing.settle_host_events(k, 1000, 1000 + SETTLE // 2) is None
    assert k.advanced == [1000 + SETTLE // 2]
    k = Settling(1000)
    assert pacing.settle_host_events(k, 1000, 10**12) == 10**12
    assert k.advanced == [1000 + SETTLE]
    # the kernel already went past the request's instant: from there on
    k = Settling(5000)
    assert pacing.settle_host_events(k, 1000, 10**12) == 10**12
    assert k.advanced == [5000 + SETTLE]
    # done already: nothing to simulate
    k = Settling(5000)
    assert pacing.settle_host_events(k, 1000, 4000) is None
    assert k.advanced == []


class Behind:
    """A kernel at ``sim_time`` whose watchers ask ``threshold`` (a gap's)."""

    def __init__(self, sim_time, threshold, gap=None):
        self.sim_time = sim_time
        self.threshold = threshold
        self.gap = gap
        self.timekeeper = self

    def gap_threshold(self):
        return self.threshold


def test_a_paced_machine_behind_while_something_records_is_stepped_in_full():
    from fakefs.sim.timekeeper import GAP_NS
    p = pacing.Pacer(Clock())
    recording = Behind(1_000_000_000, 300_000_000)
    # never a gap's length at once: no gap begins, nothing is skipped
    assert p.target(recording, 9_000_000_000) == 1_300_000_000
    assert p.target(recording, 1_100_000_000) == 1_100_000_000
    # nothing records: a stretch nobody saw, a gap as before
    assert p.target(Behind(1_000_000_000, GAP_NS), 9_000_000_000) == 9_000_000_000
    # a gap under way goes on to its end; a manual clock's request waits for all of it
    assert p.target(Behind(1_000_000_000, 300_000_000, gap=object()), 9_000_000_000) == 9_000_000_000
    assert pacing.Pacer(ManualClock()).target(recording, 9_000_000_000) == 9_000_000_000


def test_a_request_that_waited_is_served_where_the_machine_got_but_never_in_a_gap():
    p = pacing.Pacer(Clock())
    assert p.served_at(Behind(1_000_000_000, 300_000_000), 9_000_000_000) == 1_000_000_000
    assert p.served_at(Behind(1_000_000_000, 300_000_000, gap=object()), 9_000_000_000) is None
    assert pacing.Pacer(ManualClock()).served_at(Behind(1_000_000_000, 300_000_000), 9_000_000_000) is None
    # nothing records: what is behind is a stretch nobody saw, caught up whole
    from fakefs.sim.timekeeper import GAP_NS
    assert p.served_at(Behind(1_000_000_000, GAP_NS), 9_000_000_000) is None


def test_a_machine_more_than_late_ns_behind_is_running_late():
    p = pacing.Pacer(Clock())
    t = 1_000_000_000
    assert p.running_late(Behind(t, 300_000_000), t + pacing.LATE_NS + 1)
    assert not p.running_late(Behind(t, 300_000_000), t + pacing.LATE_NS)
    # inside a gap, or on a manual clock: never (what it serves is its instant)
    assert not p.running_late(Behind(t, 300_000_000, gap=object()), t + 10 * pacing.LATE_NS)
    assert not pacing.Pacer(ManualClock()).running_late(Behind(t, 300_000_000), t + 10 * pacing.LATE_NS)
    # nor once nothing records (nobody keeps it up: a request catches up)
    from fakefs.sim.timekeeper import GAP_NS
    assert not p.running_late(Behind(t, GAP_NS), t + 10 * pacing.LATE_NS)


def test_a_machine_that_fell_behind_while_recording_stays_kept_up_until_it_caught_up():
    from fakefs.sim.timekeeper import GAP_NS
    p = pacing.Pacer(Clock())
    t = 1_000_000_000
    late = t + pacing.LATE_NS + 1
    # nothing recording: a stretch nobody saw, never "behind"
    p.note_lag(Behind(t, GAP_NS), late)
    assert not p.behind and not p.kept_up(Behind(t, GAP_NS))
    # late while recording: behind; it stays so once nothing records ...
    p.note_lag(Behind(t, 300_000_000), late)
    assert p.behind
    p.note_lag(Behind(t, GAP_NS), late)
    assert p.behind and p.kept_up(Behind(t, GAP_NS))
    assert p.served_at(Behind(t, GAP_NS), late) == t
    # ... (a gap the runner began is not served from) ...
    assert not p.kept_up(Behind(t, GAP_NS, gap=object()))
    # ... until it gets within LATE_NS
    p.note_lag(Behind(t, GAP_NS), t + pacing.LATE_NS)
    assert not p.behind and not p.kept_up(Behind(t, GAP_NS))
    # a manual clock is never behind
    m = pacing.Pacer(ManualClock())
    m.note_lag(Behind(t, 300_000_000), late)
    assert not m.behind
