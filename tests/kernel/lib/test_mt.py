"""The generator hack of ``lib/_mt.pxd``: drawing from a ``random.Random``'s
own state in C gives what ``random()`` gives, and leaves the state as it."""

from __future__ import annotations

import random

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
