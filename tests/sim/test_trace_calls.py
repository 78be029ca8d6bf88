"""The machine's call instants (``sim/_trace_calls.pyx``) against their
plain-Python expressions (its ``CallWriter`` is held to the tuples' path in
tests/kernel/trace/test_trace_function.py)."""

from __future__ import annotations

import array
import bisect
import random

import pytest

from fakefs.sim._trace_calls import CHUNK, AwakeCalls, call_instants, instants_upto


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


# --- AwakeCalls: a CPU's calls over its awake time --------------------------------------------
def _in(spans, a, b):
    """``Scheduler.halted_spans``' answer for [a, b)."""
    return [(max(x, a), min(y, b)) for x, y in spans if min(y, b) > max(x, a)]


def _slow_calls(seed, rate, spans, t0, t1):
    """The slow path: the chunks' draws in awake ns, each placed at the
    awake ns of that number after ``t0``, counting span by span."""
    rng = random.Random(seed)
    carry = rng.random()
    awake_ns = (t1 - t0) - sum(min(b, t1) - max(a, t0) for a, b in spans if min(b, t1) > max(a, t0))
    offs, start = [], 0
    while start < awake_ns:
        want = carry + rate / 1e9 * CHUNK
        n = int(want)
        carry = want - n
        offs += sorted(start + int(rng.random() * CHUNK) for _ in range(n))
        start += CHUNK
    out = []
    for x in offs:
        if x >= awake_ns:
            break
        t = t0
        for a, b in spans:
            if b <= t0:
                continue
            a = max(a, t0)
            if x < a - t:
                break
            x -= a - t
            t = b
        out.append(t + x)
    return out


SPANS = [(1_500_000, 2_000_000), (2_000_000, 2_000_001), (3_300_000, 7_100_000),
         (9_000_000, 9_000_500)]


def test_awake_calls_are_the_slow_paths():
    for rate in (500_000, 1_234, 3_000_000):
        calls = AwakeCalls(rate, random.Random(7))
        got = calls.upto(_in(SPANS, 0, 12_000_000), 12_000_000).tolist()
        assert got == _slow_calls(7, rate, SPANS, 0, 12_000_000)
        assert not [t for t in got for a, b in SPANS if a <= t < b]
        assert calls.pos == 12_000_000 and calls.awake == 12_000_000 - 4_300_501
    assert AwakeCalls(500_000, random.Random(7)).upto([], 5_000_000).tolist() == \
        _slow_calls(7, 500_000, [], 0, 5_000_000)


def test_awake_calls_do_not_depend_on_the_stretches():
    """Cut at any instants (in a halt, at its edges, 1 ns apart), the same calls."""
    whole = AwakeCalls(500_000, random.Random(3)).upto(_in(SPANS, 0, 12_000_000), 12_000_000).tolist()
    rng = random.Random(11)
    for cuts in ([1_500_000, 2_000_000, 2_000_001, 7_100_000], [5, 6, 7, 8_000_000],
                 sorted(rng.randrange(12_000_000) for _ in range(300))):
        calls = AwakeCalls(500_000, random.Random(3))
        got = []
        for b in cuts + [12_000_000]:
            got += calls.upto(_in(SPANS, calls.pos, b), b).tolist()
            assert calls.pos == max(b, calls.pos)
        assert got == whole
    assert AwakeCalls(500_000, random.Random(3)).upto(_in(SPANS, 0, 0), 0).tolist() == []


def test_awake_calls_skip_what_was_not_simulated():
    """After ``skip_to(t)`` the stream goes on from t, with the call it would have made next."""
    a = AwakeCalls(500_000, random.Random(4))
    first = a.upto([], 1_000_000).tolist()
    a.skip_to(50_000_000)
    a.skip_to(2_000_000)                           # (never back)
    later = a.upto([], 51_000_000).tolist()
    both = AwakeCalls(500_000, random.Random(4)).upto([], 2_000_000).tolist()
    assert first + [t - 49_000_000 for t in later] == both
    assert a.awake == 2_000_000
