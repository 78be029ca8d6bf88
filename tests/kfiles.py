"""Reading and writing a simulated kernel's pseudo-files without a mount.

Each call first lets the kernel catch up, as the FUSE adapter does before a
request (``sim.files``).  ``wr`` raises KernelError like the kernel's handler would.
"""

import os

import pytest

from fakefs.kernel.fs.pseudo import KernelError
from fakefs.sim.files import read_file, write_file

TRACING = "sys/kernel/tracing/"


def node(k, path, base=TRACING):
    n = k.tree.root.walk(base + path)
    assert n is not None, path
    return n


def rd(k, path, base=TRACING):
    return read_file(k, base + path).decode()


def wr(k, path, data, flags=os.O_WRONLY | os.O_TRUNC, base=TRACING):
    return write_file(k, base + path, data.encode(), flags)


def errno_of(fn, *a):
    with pytest.raises(KernelError) as e:
        fn(*a)
    return e.value.errno


def reset_triggers(k, prefix="", flags=os.O_WRONLY | os.O_TRUNC):
    """test.d/functions reset_trigger_file() over the trigger files that have
    triggers (of the top level, or of the instance at ``prefix``): ``!`` and
    each listing line up to its ``[`` (O_APPEND keeps the hist triggers a
    truncating open would drop)."""
    for tr in list(k.tracing.arrays()):
        if (prefix == "") != tr.is_top:
            continue
        for ev in list(tr.event_triggers):
            path = prefix + "events/%s/%s/trigger" % (ev.system, ev.name)
            for line in rd(k, path).splitlines():
                if not line.startswith("#"):
                    wr(k, path, "!" + line.split("[")[0] + "\n", flags)


def sim_fork(k, cpu=0, step=1_000_000):
    """A task of the simulated kernel forks (copy_process() on ``cpu``) a
    step after now, and the kernel catches up a step past it: (parent,
    child)."""
    k.clock.advance(step)
    k.timekeeper.run_until_now()
    parent = next(t for t in k.sched.tasks.values() if t.pid > 1)
    child = k.lifecycle.fork(parent, cpu, k.sim_time)
    k.clock.advance(step)
    k.timekeeper.run_until_now()
    return parent, child
