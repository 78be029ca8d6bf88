"""Helpers of the dynamic ftrace tests: a booted kernel, ftracetest's
reset_ftrace_filter(), and what the trace shows."""

import collections
import os

import pytest

from fakefs import sim
from fakefs.kernel.init import Kernel
from fakefs.sim.clock import ManualClock
from kfiles import rd, wr

APPEND = os.O_WRONLY | os.O_APPEND
TRUNC = os.O_WRONLY | os.O_TRUNC
MS = 1_000_000


def boot(host_tasks=False, nr_cpus=2):
    clock = ManualClock()
    k = Kernel(seed=7, nr_cpus=nr_cpus, clock=clock, host_kallsyms=False)
    if host_tasks:
        k.host_tasks = True
    sim.boot_kernel(k)
    sim.attach(k)
    return k, clock


def undo_ftrace(k):
    """Undo every ftrace setting of the top level."""
    reset_ftrace_filter(k)
    wr(k, "set_ftrace_notrace", "\n")
    wr(k, "current_tracer", "nop\n")
    wr(k, "events/enable", "0\n")
    wr(k, "tracing_on", "1\n")


def entries(k, path="trace"):
    return [ln for ln in rd(k, path).splitlines() if not ln.startswith("#")]


def functions(lines):
    return collections.Counter(ln.split(": ", 1)[1].split()[0] for ln in lines
                               if "<stack trace>" not in ln and not ln.startswith(" =>"))


def reset_ftrace_filter(k):
    """test.d/functions reset_ftrace_filter(), word for word."""
    wr(k, "set_ftrace_filter", "\n")
    for t in rd(k, "set_ftrace_filter").splitlines():
        if t.startswith("#"):
            continue
        fields = t.split(":")
        if len(fields) < 2 or not fields[1]:
            continue
        if t not in rd(k, "set_ftrace_filter"):
            continue
        name = fields[0].split(" ")[0]
        if fields[1] in ("enable_event", "disable_event"):
            trig, limit = ":".join(fields[1:4]), (fields[4] if len(fields) > 4 else "")
        else:
            trig, limit = fields[1], (fields[2] if len(fields) > 2 else "")
        if limit != "unlimited":
            trig += ":" + limit
        wr(k, "set_ftrace_filter", "!%s:%s\n" % (name, trig))


# the fixtures of the ftrace test modules (each binds them: ``booted = booted``)
@pytest.fixture(scope="module")
def booted():
    return boot()


@pytest.fixture
def k(booted):
    """The shared kernel, with every ftrace setting of the top level undone."""
    k, _clock = booted
    yield k
    undo_ftrace(k)
