"""Helpers of the event filter tests: a booted kernel's tracing files,
read and written the way a user would (a refused write gives minus its
errno), and the filter compiled for an event."""

import os

import pytest

from fakefs import sim
from fakefs.kernel.fs.pseudo import File, KernelError
from fakefs.sim.clock import ManualClock
from fakefs.kernel.trace import trace_events_filter as tef
from fakefs.sim.files import finish

SW = "events/sched/sched_switch/filter"


def boot(nr_cpus=2):
    clock = ManualClock()
    k = sim.boot(cmdline="", seed=7, nr_cpus=nr_cpus, clock=clock)
    return k, clock


def forget_filters(k):
    """Leave no filter behind for the next test."""
    tr = k.tracing.global_trace
    tr.event_filters.clear()
    tef.filters_of(tr).strings.clear()


def node(k, path):
    n = k.tree.root.walk("sys/kernel/tracing/" + path)
    assert n is not None, path
    return n


def rd(k, path, off=0, size=1 << 20):
    k.timekeeper.run_until_now()                 # (the caller brings the machine to its instant)
    n = node(k, path)
    f = File(n, os.O_RDONLY)
    n.fops.open(f)
    try:
        return n.fops.read(f, off, size).decode("latin-1")
    finally:
        n.fops.release(f)


def wr(k, path, data, flags=os.O_WRONLY | os.O_TRUNC):
    """The write's result: its count, or minus the errno."""
    k.timekeeper.run_until_now()
    n = node(k, path)
    f = File(n, flags)
    n.fops.open(f)
    try:
        return finish(k, n.fops.write(f, data.encode("latin-1") if isinstance(data, str) else data))
    except KernelError as e:
        return -e.errno
    finally:
        n.fops.release(f)


def ev_of(k, name):
    return next(ev for ev in k.tracing.events if ev.name == name)


def switch_entry(k, pid=100, prev=("bash", 100, 120, "S"), nxt=("cc1", 200, 120),
                 flags=0, pc=0):
    ev = ev_of(k, "sched_switch")
    args = prev + nxt
    return (0, ev.id, pid, flags, pc, args, None)


def flt(k, text, evname="sched_switch"):
    tr = k.tracing.global_trace
    return tef.filters_of(tr).build(ev_of(k, evname), text)



# the fixtures of the event filter test modules (each binds them: ``kc = kc``)
@pytest.fixture(scope="module")
def kc():
    return boot()


@pytest.fixture
def k(kc):
    k, _ = kc
    yield k
    forget_filters(k)
