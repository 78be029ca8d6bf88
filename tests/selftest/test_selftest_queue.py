"""The shards' queue of tests (fakefs/selftest/queue.py)."""

from __future__ import annotations

import multiprocessing

from fakefs.selftest.queue import ShardQueue


def test_claims_in_order_and_stop_leaves_none(tmp_path):
    path = tmp_path / "queue"
    q = ShardQueue.create(path, 5)
    other = ShardQueue(path)                # (a shard's own, on the same file)
    assert (q.claim(5), other.claim(5), q.left()) == ((0, 1), (1, 2), 3)
    q.stop()
    assert other.claim(5) is None and q.left() == 0


def test_a_claim_takes_the_tests_left_over_the_divisor_at_least_one(tmp_path):
    """Guided: long runs first, single tests at the end."""
    q = ShardQueue.create(tmp_path / "queue", 10)
    got = []
    while (c := q.claim(4)) is not None:
        got.append(c)
    assert got == [(0, 3), (3, 5), (5, 7), (7, 8), (8, 9), (9, 10)]


def _claim_all(path, out):
    q = ShardQueue(path)
    got = []
    while True:
        c = q.claim(3)
        if c is None:
            break
        got.extend(range(*c))
    out.put(got)


def test_processes_claiming_from_one_file_take_each_test_once(tmp_path):
    path = tmp_path / "queue"
    ShardQueue.create(path, 400)
    ctx = multiprocessing.get_context("fork")
    out = ctx.Queue()
    procs = [ctx.Process(target=_claim_all, args=(path, out)) for _ in range(3)]
    for p in procs:
        p.start()
    got = [out.get(timeout=60) for _ in procs]
    for p in procs:
        p.join()
    assert sorted(i for g in got for i in g) == list(range(400))
    assert all(g == sorted(g) for g in got)
