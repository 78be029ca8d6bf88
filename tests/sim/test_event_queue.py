"""The machine's queue (``sim/_event_queue.pyx``): ``heapq`` over a list of
``(t, seq, kind, a, b)`` tuples, the keys compared in C."""

from __future__ import annotations

import heapq
import random

import pytest

from fakefs.sim._event_queue import EventQueue


def test_pushes_and_pops_come_out_as_heapqs():
    q, h = EventQueue(), []
    rng = random.Random(1)
    seq = 0
    for _ in range(30_000):
        if rng.random() < 0.55:
            seq += 1
            e = (rng.randrange(1000) << 40, seq, rng.randrange(9), rng.randrange(4), ("b", seq))
            q.push(*e)                                # (instants beyond 32 bits)
            heapq.heappush(h, e)
        else:
            t1 = rng.randrange(1000) << 40
            want = heapq.heappop(h) if h and h[0][0] < t1 else None
            assert q.pop_before(t1) == want
            assert q.first_time() == (h[0][0] if h else None)
    assert len(q) == len(h) and bool(q) == bool(h)
    assert sorted(q) == sorted(h)
    q.clear()
    assert not q and list(q) == [] and q.pop_before(1 << 62) is None


def test_events_at_one_instant_come_in_their_order():
    q = EventQueue()
    for seq in (5, 3, 9, 1):
        q.push(100, seq, 0, 0, None)
    assert [q.pop_before(101)[1] for _ in range(4)] == [1, 3, 5, 9]


def test_a_time_that_is_not_an_int_is_refused():
    with pytest.raises(TypeError):
        EventQueue().push(1.5, 1, 0, 0, None)


def test_retime_brings_a_kinds_later_events_in_to_an_instant():
    q = EventQueue()
    q.push(50, 1, 7, -1, "early")
    q.push(300, 2, 7, -1, "late")
    q.push(200, 3, 1, 0, "other")
    q.push(400, 4, 7, -1, "later")
    assert q.retime(7, 100)
    out = [q.pop_before(1000) for _ in range(4)]
    assert out == [(50, 1, 7, -1, "early"), (100, 2, 7, -1, "late"),
                   (100, 4, 7, -1, "later"), (200, 3, 1, 0, "other")]
    assert not q.retime(7, 100)


def test_any_tuple_that_starts_with_its_instant_and_number():
    q, h = EventQueue(), []
    rng = random.Random(2)
    for seq in range(1, 3000):
        e = (rng.randrange(10**12), seq, "fn", seq * 3)
        q.push_entry(e)
        heapq.heappush(h, e)
    assert q.first_time() == h[0][0]
    assert [q.pop_before(1 << 62) for _ in range(len(h))] == [heapq.heappop(h) for _ in range(2999)]
    with pytest.raises(TypeError):
        q.push_entry((1.0, 1, "fn", None))
