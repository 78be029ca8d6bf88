"""The compiled pieces of the function tracer (``_trace_function.pyx``)
against their plain-Python expressions (the entries and stack records are
held equal to one call at a time in test_trace_activity.py)."""

from __future__ import annotations

import random

from fakefs.kernel.trace._trace_function import call_instants


def test_call_instants_are_the_sorted_draws():
    for seed, t0, span, n in ((1, 0, 10_000_000, 5000), (2, 123_456_789_012, 7, 300),
                              (3, 5, 1 << 40, 1000), (4, 0, 1000, 0)):
        a, b = random.Random(seed), random.Random(seed)
        want = sorted(t0 + int(b.random() * span) for _ in range(n))
        assert call_instants(a, t0, span, n) == want
        assert a.random() == b.random()          # as many draws


class Counting(random.Random):
    """A generator whose ``random`` is its own: drawn by calling it."""

    def __init__(self, seed):
        super().__init__(seed)
        self.calls = 0

    def random(self):
        self.calls += 1
        return super().random()


def test_call_instants_call_a_generator_of_its_own_making():
    a, b = Counting(5), random.Random(5)
    want = sorted(100 + int(b.random() * 1000) for _ in range(50))
    assert call_instants(a, 100, 1000, 50) == want
    assert a.calls == 50
