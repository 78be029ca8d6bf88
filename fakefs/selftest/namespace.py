"""The private mount namespace the tests run in, seen from /proc/self/mounts.

As root the harness runs under ``unshare -m --propagation private``; without
root under ``unshare -Ur -m ...`` (a user namespace where the user is root,
if the kernel allows unprivileged ones).  Inside, every ``/proc/mounts``
line mentioning ``tracefs`` is detached (in that namespace only), so that
the simulated tree bound on TRACING_DIR is the first one ftracetest finds.
The namespace code is shared with ``fakefs sandbox`` (fakefs/namespace.py);
this module adds the harness's host checks.
"""

from __future__ import annotations

import os
import shutil

from ..cli.namespace import (TRACING_DIR, _unescape_mount_field, detach_tracefs_mounts,
                         fuse_problem, in_private_mount_ns, mount_ns, mounts, tracefs_lines,
                         umount, use_userns, userns_problem)
from .errors import SelftestError

__all__ = ["TRACING_DIR", "_unescape_mount_field", "check_host", "detach_tracefs_mounts",
           "in_private_mount_ns", "mount_ns", "mounts", "tracefs_lines", "umount",
           "use_userns", "userns_problem"]


def check_host() -> None:
    if not shutil.which("unshare"):
        raise SelftestError("unshare(1) not found (util-linux)")
    if use_userns():
        problem = userns_problem()
        if problem:
            raise SelftestError("without root, the selftests run in a user namespace: %s; "
                                "or run them as root" % problem)
    problem = fuse_problem(use_userns(), "the selftests")
    if problem:
        raise SelftestError(problem)
    if not os.path.isdir(TRACING_DIR):
        raise SelftestError("%s does not exist on this host" % TRACING_DIR)
