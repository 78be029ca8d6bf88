"""The machine's call instants (``sim/_trace_calls.pyx``) against their
plain-Python expressions (its ``CallWriter`` is held to the tuples' path in
tests/kernel/trace/test_trace_function.py)."""

from __future__ import annotations

import array
import bisect
import random

import pytest

from fakefs.sim._trace_calls import call_instants, instants_upto


def test_call_instants_are_the_sorted_draws():
    for seed, t0, span, n in ((1, 0, 10_000_000, 5000), (2, 123_456_789_012, 7, 300),
                              (3, 5, 1 << 40, 1000), (4, 0, 1000, 0)):
        a, b = random.Random(seed), random.Random(seed)
        want = sorted(t0 + int(b.random() * span) for _ in range(n))
        assert call_instants(a, t0, span, n).tolist() == want
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
    assert call_instants(a, 100, 1000, 50).tolist() == want
    assert a.calls == 50


def test_instants_upto_is_bisect():
    rng = random.Random(9)
    for n in (0, 1, 2, 7, 300):
        times = call_instants(rng, 1000, 500, n)     # (repeats among them)
        as_list = times.tolist()
        for ts in range(990, 1510, 3):
            for lo in {0, n // 3, n}:
                assert instants_upto(times, ts, lo, True) == bisect.bisect_right(as_list, ts, lo)
                assert instants_upto(times, ts, lo, False) == bisect.bisect_left(as_list, ts, lo)
    for other in ([1, 2, 3], array.array("d", [1.0]), None):   # (no copy made of anything else)
        with pytest.raises(TypeError):
            instants_upto(other, 2, 0, True)
