"""The catch-up's steps sized to what they cost (fuse/pacing.py)."""

from fakefs.fuse import pacing
from fakefs.kernel.init import STEP_NS
from fakefs.kernel.time import Clock, ManualClock


class Costly:
    """A kernel whose steps cost ``per_ms`` seconds of work per simulated ms."""

    def __init__(self, now, per_ms):
        self.now = now
        self.per_ms = per_ms
        self.steps = []

    def catch_up(self, max_steps=8, until=None, step_ns=STEP_NS):
        self.steps.append(step_ns)
        self.now[0] += self.per_ms * step_ns / 1e6
        return True


def test_steps_shrink_to_the_wall_time_and_grow_back(monkeypatch):
    now = [0.0]
    monkeypatch.setattr(pacing.time, "perf_counter", lambda: now[0])
    p = pacing.Pacer(Clock())
    k = Costly(now, per_ms=0.005)             # everything on: 5 ms of work a simulated ms
    for _ in range(20):
        assert p.step(k, 0)
    assert k.steps[0] == STEP_NS              # the first step is a whole one
    want = pacing.STEP_WALL_S / 0.005 * 1e6   # what takes STEP_WALL_S: 0.4 ms
    assert max(k.steps[-5:]) <= max(pacing.MIN_STEP_NS, want * 2)
    k.per_ms = 0.00001                        # nothing traced: cheap
    for _ in range(20):
        p.step(k, 0)
    assert k.steps[-1] == STEP_NS


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
