"""The compiled reach tables (``fakefs/kernel/_reach.pyx``) are the plain
Python computation's (reach_reference.py), to the bit, for every profile
and every kind of target: event sites, and sets of functions."""

from __future__ import annotations

import random

import pytest
from workload_helpers import boot

from fakefs.kernel.reach_reference import compute as reference


@pytest.fixture(scope="module")
def k():
    return boot(seed=2, nr_cpus=2)


def _kinds(w):
    rng = random.Random(5)
    ids = range(len(w.wg.names))
    sets = [frozenset(rng.sample(ids, n)) for n in (1, 3, 40, 400)]
    return sorted(w.wg.events) + sets


def test_the_tables_are_the_references(k):
    w = k.workload
    reach = w.reach
    seen = 0
    for profile, table in sorted(w.wg.tables.items()):
        for kind in _kinds(w):
            got = reach._compute(table, kind)
            want = reference(reach, table, kind)
            assert got[0] == want[0], (profile, kind)                  # dist
            for name in ("start", "callees", "cum", "total", "far"):
                assert getattr(got[1], name) == getattr(want[1], name), (profile, kind, name)
            assert got[2] == want[2], (profile, kind)                  # prem
            assert got[3] == want[3], (profile, kind)                  # P
            seen += sum(1 for p in want[3] if 0 < p < 1)
    assert seen > 1000          # chances strictly between 0 and 1: the arithmetic was compared
