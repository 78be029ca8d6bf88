"""sim/clock.py: the machine's clock that follows the host's."""

from __future__ import annotations

import time

from fakefs.sim import clock as sclock
from fakefs.sim.clock import Clock


def test_the_clock_is_the_hosts_since_boot(monkeypatch):
    host = [1_000_000_000]
    monkeypatch.setattr(sclock.time, "monotonic_ns", lambda: host[0])
    c = Clock(boot_offset_ns=50_000_000)        # booted 50 ms ago
    assert c.now_ns() == 50_000_000
    host[0] += 300_000_000
    assert c.now_ns() == 350_000_000
    assert c.from_monotonic(1_200_000_000) == 250_000_000


def test_now_never_goes_back():
    c = Clock()
    last = c.now_ns()
    for _ in range(200):
        t0 = time.monotonic_ns()
        while time.monotonic_ns() - t0 < 20_000:
            pass
        now = c.now_ns()
        assert now >= last
        last = now
