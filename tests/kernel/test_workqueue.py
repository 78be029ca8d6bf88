"""Work items by pool, and the events of their life."""

from __future__ import annotations

import pytest

from fakefs.kernel.sched import Scheduler
from fakefs.kernel.tracepoint import Tracepoints
from fakefs.kernel.workqueue import WORK_CPU_UNBOUND, Workqueues, load_works


class _Syms:
    def addr_of(self, name):
        return 0 if name == "missing_fn" else 0xffffffff81000000 + (hash(name) & 0xffff) * 16


def _wq(specs=None, ncpu=2):
    tps = Tracepoints()
    wq = Workqueues(Scheduler(ncpu, tps), tps, ncpu, specs)
    wq.set_symbols(_Syms())
    return wq, tps


def test_the_data_has_works_for_every_pool():
    pools = {w["pool"] for w in load_works()}
    assert pools == {"percpu", "unbound", "highpri"}
    wq, _ = _wq()
    for pool in ("percpu", "highpri"):
        for cpu in range(2):
            w = wq.pick(pool, cpu, 0.5)
            assert w is not None and w.cpu == cpu and w.pool == pool
    w = wq.pick("unbound", 1, 0.5)
    assert w.cpu == -1
    assert wq.pick("percpu", 0, 0.0).timer is not None
    assert wq.pick("highpri", 0, 0.0).timer is None


def test_unknown_pool_is_refused_and_missing_functions_left_out():
    with pytest.raises(ValueError):
        _wq([{"function": "x", "workqueue": "events", "pool": "nope", "weight": 1}])
    wq, _ = _wq([{"function": "missing_fn", "workqueue": "events", "pool": "percpu", "weight": 1}])
    assert wq.pick("percpu", 0, 0.3) is None


def test_queue_and_execute_events():
    wq, tps = _wq()
    hits = []
    for name in ("workqueue_queue_work", "workqueue_activate_work",
                 "workqueue_execute_start", "workqueue_execute_end"):
        tps.get(name).register(lambda cpu, ts, pid, flags, pc, args, n=name:
                               hits.append((n, flags, pc, args)))
    w = wq.pick("unbound", 0, 0.1)
    wq.queue_work(1, 10, w, softirq=True)
    # a kworker runs it on CPU 0 (CPU 1 stays idle)
    wq.sched.curr[0] = wq.sched.spawn("kworker/u4:1", 0, kthread=True)
    wq.execute_start(0, 20, w)
    wq.execute_end(0, 30, w)
    assert [h[0] for h in hits] == ["workqueue_queue_work", "workqueue_activate_work",
                                    "workqueue_execute_start", "workqueue_execute_end"]
    q = hits[0]
    assert (q[1], q[2]) == (0x11, 3)       # in a softirq on CPU 1's idle task (its own depth 1)
    assert q[3] == (w.addr, w.function, w.workqueue, WORK_CPU_UNBOUND, -1)
    assert (hits[2][1], hits[2][2]) == (0, 0)
