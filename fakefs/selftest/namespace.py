"""The private mount namespace the tests run in, seen from /proc/self/mounts.

As root the harness runs under ``unshare -m --propagation private``; without
root under ``unshare -Ur -m ...`` (a user namespace where the user is root,
if the kernel allows unprivileged ones).  Inside, every ``/proc/mounts``
line mentioning ``tracefs`` is detached (in that namespace only), so that
the simulated tree bound on TRACING_DIR is the first one ftracetest finds.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess

from .errors import SelftestError

TRACING_DIR = "/sys/kernel/tracing"


def userns_problem() -> str | None:
    """Why ``unshare -Urm`` does not work here (None: it does)."""
    if not shutil.which("unshare"):
        return "unshare(1) not found (util-linux)"
    try:
        r = subprocess.run(["unshare", "-Ur", "-m", "--propagation", "private", "true"],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           timeout=10)
    except (OSError, subprocess.TimeoutExpired) as e:
        return "unshare -Urm: %s" % e
    if r.returncode != 0:
        return ("unprivileged user namespaces are not allowed here (unshare -Urm: %s); "
                "see sysctl kernel.unprivileged_userns_clone / user.max_user_namespaces / "
                "kernel.apparmor_restrict_unprivileged_userns" % r.stdout.strip())
    return None


def use_userns() -> bool:
    return os.geteuid() != 0


def check_host() -> None:
    if not shutil.which("unshare"):
        raise SelftestError("unshare(1) not found (util-linux)")
    if use_userns():
        problem = userns_problem()
        if problem:
            raise SelftestError("without root, the selftests run in a user namespace: %s; "
                                "or run them as root" % problem)
    if not os.path.exists("/dev/fuse"):
        raise SelftestError("/dev/fuse is missing")
    if use_userns() and not os.access("/dev/fuse", os.R_OK | os.W_OK):
        raise SelftestError("/dev/fuse is not usable by this user (a user namespace mounts "
                            "with it directly); as root: chmod 0666 /dev/fuse (Debian's "
                            "default), or run the selftests as root")
    if not os.path.isdir(TRACING_DIR):
        raise SelftestError("%s does not exist on this host" % TRACING_DIR)



def _unescape_mount_field(s: str) -> str:
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), s)


def mounts() -> list[tuple[str, str, str]]:
    """(source, mountpoint, type) of every line of /proc/self/mounts."""
    out = []
    with open("/proc/self/mounts") as f:
        for line in f:
            fields = line.split()
            if len(fields) >= 3:
                out.append((fields[0], _unescape_mount_field(fields[1]), fields[2]))
    return out


def tracefs_lines() -> list[tuple[str, str, str]]:
    """The lines ftracetest's ``grep tracefs /proc/mounts`` would match."""
    out = []
    with open("/proc/self/mounts") as f:
        for line in f:
            if "tracefs" in line:
                fields = line.split()
                out.append((fields[0], _unescape_mount_field(fields[1]), fields[2]))
    return out


def mount_ns() -> str:
    try:
        return os.readlink("/proc/self/ns/mnt")
    except OSError:
        return ""


def in_private_mount_ns(outer_ns: str) -> bool:
    """True if this process is in another mount namespace than *outer_ns*
    (the namespace of the process that ran ``unshare``) and no mount in it
    propagates to a peer group (``shared:N`` in mountinfo)."""
    ns = mount_ns()
    if not ns or not outer_ns or ns == outer_ns:
        return False
    with open("/proc/self/mountinfo") as f:
        for line in f:
            pre = line.split(" - ", 1)[0].split()
            if any(x.startswith("shared:") for x in pre[6:]):
                return False
    return True


def umount(path: str, lazy: bool = False) -> bool:
    cmd = ["umount"] + (["-l"] if lazy else []) + [path]
    return subprocess.run(cmd, stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL).returncode == 0


def detach_tracefs_mounts(userns: bool = False) -> None:
    """Lazily unmount every line mentioning tracefs (private namespace only).

    In a user namespace the mounts inherited from the host are locked and
    stay; that is fine when the first of them is TRACING_DIR, which our
    mount then covers (checked after the bind mount)."""
    for _ in range(10):
        lines = tracefs_lines()
        if not lines:
            return
        detached = False
        for _, mnt, _ in sorted(lines, key=lambda l: -len(l[1])):
            detached |= umount(mnt, lazy=True)
        if not detached and userns:
            return
    raise SelftestError("could not detach the existing tracefs mounts: %s" % tracefs_lines())
