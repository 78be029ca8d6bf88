"""Ping sockets over loopback (net/ipv4/ping.c) for fakefs's own ``ping``.

The selftests run ``ping $LOCALHOST -c N`` to have a process named
``ping`` sleep and wake on the simulated machine.  Inside ``fakefs
selftest`` the ``ping`` found first in PATH is fakefs's
(``fakefs/selftest/ping.py``): a real process whose echo requests are
system calls into this kernel through the control file ``.fakefs/ping``
(beside the loader's ``.fakefs/modules``).  Each write ``echo`` is one
request and its reply over loopback: the caller, asleep since its last
one, is woken and runs on a CPU (``HostProcesses.syscall``: the wakeup
and the switch the machine's events show, with its comm), then sleeps
again until the next.  Its fork, exec and exit are the host's, followed as
any real process's.
"""

from __future__ import annotations

import errno

from .fs.pseudo import FileOperations, KernelError, later
from .module import CONTROL_DIR

CONTROL_NAME = "ping"


class PingControlOps(FileOperations):
    """``.fakefs/ping``: one echo request and reply per ``echo`` written."""

    observes = False

    def write(self, f, data):
        if data.decode("latin-1").split() != ["echo"]:
            raise KernelError(errno.EINVAL)
        k = f.data
        if k.driver is not None and f.pid:
            _pid, _cpu, ts = k.driver.host_task(f.pid, k.sim_time)
            return later(k, ts + 1, lambda: len(data))     # the caller runs, then replies
        return len(data)


def ping_init(kernel) -> None:
    ctl = kernel.tree.makedirs(CONTROL_DIR)
    kernel.tree.create_file(CONTROL_NAME, 0o600, ctl, kernel, PingControlOps())
