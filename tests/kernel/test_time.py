"""kernel/time.py: the clock that follows the host's, and stands still while
a request waits for the simulation (its lag)."""

from __future__ import annotations

import time

from fakefs.kernel import time as ktime
from fakefs.kernel.time import MAX_LAG_NS, Clock


def test_the_clock_falls_behind_by_what_it_stood_still_and_resyncs():
    c = Clock()
    a = c.now_ns()
    c.stood_still(300_000_000)
    b = c.now_ns()
    assert c.lag == 300_000_000
    assert b < a + 10_000_000                  # 300 ms back, less what passed
    c.stood_still(0)
    assert c.lag == 300_000_000
    c.resync()
    assert c.lag == 0 and c.now_ns() >= b + 300_000_000


def test_the_lag_is_bounded():
    c = Clock()
    for _ in range(5):
        c.stood_still(400_000_000)
    assert c.lag == MAX_LAG_NS


def test_the_host_instants_are_dated_with_the_lag_of_their_time(monkeypatch):
    """While the machine stood still every host instant is the one it stood
    at; later ones run on from there; before, the lag of then; the kernel's
    times of later instants are never earlier."""
    host = [1_000_000_000]
    monkeypatch.setattr(ktime.time, "monotonic_ns", lambda: host[0])
    c = Clock()                                 # boot at host 1 s
    host[0] += 500_000_000
    c.stood_still(200_000_000)                  # host 1.3-1.5 s: stood still
    host[0] += 100_000_000
    c.resync()                                  # host 1.6 s: back
    host[0] += 100_000_000
    assert c.from_monotonic(1_200_000_000) == 200_000_000
    assert c.from_monotonic(1_300_000_000) == 300_000_000
    assert c.from_monotonic(1_400_000_000) == 300_000_000
    assert c.from_monotonic(1_500_000_000) == 300_000_000
    assert c.from_monotonic(1_550_000_000) == 350_000_000
    assert c.from_monotonic(1_650_000_000) == 650_000_000
    assert c.now_ns() == 700_000_000
    seq = [c.from_monotonic(t) for t in range(1_000_000_000, 1_700_000_000, 7_000_000)]
    assert seq == sorted(seq)


def test_now_never_goes_back():
    c = Clock()
    last = c.now_ns()
    for i in range(200):
        t0 = time.monotonic_ns()
        while time.monotonic_ns() - t0 < 20_000:
            pass
        c.stood_still(int(time.monotonic_ns() - t0) if i % 3 else 0)
        if i % 50 == 49:
            c.resync()
        now = c.now_ns()
        assert now >= last
        last = now
