"""The shards' queue of tests (fakefs/selftest/queue.py)."""

from __future__ import annotations

import multiprocessing

from fakefs.selftest.queue import ShardQueue


def _claim_all(path, out):
    q = ShardQueue(path)
    got = []
    while True:
        i = q.claim()
        if i is None:
            break
        got.append(i)
    out.put(got)


def test_claims_in_order_each_once_across_queues_and_processes(tmp_path):
    path = tmp_path / "queue"
    q = ShardQueue.create(path, 5)
    other = ShardQueue(path)                # (a shard's own, on the same file)
    assert (q.claim(), other.claim(), q.left()) == (0, 1, 3)
    q.stop()
    assert other.claim() is None and q.left() == 0

    ShardQueue.create(path, 400)
    ctx = multiprocessing.get_context("fork")
    out = ctx.Queue()
    procs = [ctx.Process(target=_claim_all, args=(path, out)) for _ in range(3)]
    for p in procs:
        p.start()
    got = [out.get(timeout=60) for _ in procs]
    for p in procs:
        p.join()
    claimed = sorted(i for g in got for i in g)
    assert claimed == list(range(400))      # every test once, by one of them
    assert all(g == sorted(g) for g in got)
