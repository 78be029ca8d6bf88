"""The generator hack of ``lib/_mt.pxd``: drawing from a ``random.Random``'s
own state in C gives what ``random()`` gives, and leaves the state as it."""

from __future__ import annotations

import random

import pytest

from fakefs.kernel.lib import _mt


def test_the_layout_is_this_pythons():
    # if this fails the compiled loops call rng.random() instead: slower, not wrong
    assert _mt.layout_ok()


def test_draws_through_the_state_equal_random_and_interleave():
    a, b = random.Random(7), random.Random(7)
    got, want = [], []
    for i in range(2000):            # several refills of the 624 words
        if i % 3:
            got.append(_mt.draw_for_test(a))
        else:
            got.append(a.random())   # Python's draws in between
        want.append(b.random())
    assert got == want
    assert a.getstate() == b.getstate()


def test_a_generator_whose_random_is_its_own_is_not_drawn_directly():
    class Mine(random.Random):
        def random(self):
            return 0.5
    assert not _mt.is_direct(Mine(1))
    assert _mt.is_direct(random.Random(1))
    assert not _mt.is_direct(object())


def test_expovariate_is_the_generators_own_draw_and_double():
    a, b = random.Random(11), random.Random(11)
    for lambd in (1.0, 1 / 30.0, 2.5, 1e-3, 7, 1 / 0.02):
        for _ in range(700):
            assert _mt.expovariate(a, lambd) == b.expovariate(lambd)
    assert a.getstate() == b.getstate()


def test_expovariate_calls_a_subclass_own():
    class Mine(random.Random):
        def expovariate(self, lambd):
            return -1.0
    assert _mt.expovariate(Mine(3), 2.0) == -1.0


def test_expovariate_of_rate_zero_raises_as_pythons():
    with pytest.raises(ZeroDivisionError):
        random.Random(1).expovariate(0)
    with pytest.raises(ZeroDivisionError):
        _mt.expovariate(random.Random(1), 0)
