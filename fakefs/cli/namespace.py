"""A private mount namespace with the simulated kernel's files at the real paths.

What ``fakefs selftest`` (selftest/inner.py) and ``fakefs sandbox``
(sandbox.py) share.  Both run a stage under ``unshare -m --propagation
private`` (without root ``unshare -Ur -m ...``: a user namespace where the
user is root, if the kernel allows unprivileged ones), start a daemon there
on a temporary mount point and bind its files over the host's paths.
Nothing of it reaches the host's namespace.

* the host checks: ``userns_problem()``, ``fuse_problem()``;
* the mount table: ``mounts()``, ``tracefs_lines()``, ``in_private_mount_ns()``;
* ``detach_tracefs_mounts()``: every ``/proc/mounts`` line mentioning
  ``tracefs`` is detached (in the private namespace only);
* ``SIMULATED_HOST_FILES`` / ``SIMULATED_IF_SERVED`` and ``bind_served()``:
  host files a test or a tool writes, the simulated kernel's instead;
* the daemon's life: ``wait_ready()``, ``stop()``.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

TRACING_DIR = "/sys/kernel/tracing"

# What tests write outside the tracing directory: CPU hotplug
# (ftrace/func_hotplug.tc writes cpuN/online), the RT bandwidth that
# ftracetest's setup() lifts.  Each is bound from the daemon's tree over
# the host's path inside the private namespace.
SIMULATED_HOST_FILES = ("/sys/devices/system/cpu", "/proc/sys/kernel/sched_rt_runtime_us",
                        "/proc/sys/kernel/sched_rt_period_us")
# The selftests' namespace also has the simulated kernel's whole sysctl
# directory: ftrace/func_stack_tracer.tc writes stack_tracer_enabled, which
# a host without the stack tracer does not have to bind over.  Not the
# sandbox: its COMMAND sees the simulated /proc whole already, and in the
# daemon's namespace the host's entries it links to must stay the host's.
SIMULATED_SYSCTL_DIR = "/proc/sys/kernel"
# bound when the daemon serves them: kprobe_opt_types.tc writes
# kprobes-optimization and reads kprobes/list (a kernel with kprobes);
# fgraph-retval.tc writes /proc/interrupts (its proc_reg_write() answers
# -EIO, with the function graph tracer on; the 6.12 persona serves it)
SIMULATED_IF_SERVED = ("/proc/sys/debug", "/sys/kernel/debug", "/proc/interrupts")


class NamespaceError(Exception):
    """A setup problem of the private namespace (a complete message)."""


def _note(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# --- the host -------------------------------------------------------------------

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


def child_env() -> dict:
    """The environment of a ``python -m fakefs...`` stage: this package first."""
    env = dict(os.environ)
    root = str(Path(__file__).resolve().parents[2])
    pp = env.get("PYTHONPATH")
    env["PYTHONPATH"] = root + (os.pathsep + pp if pp else "")
    return env


def use_userns() -> bool:
    return os.geteuid() != 0


def fuse_problem(userns: bool, who: str) -> str | None:
    """Why the daemon could not mount with /dev/fuse (None: it can).  ``who``
    names what to run as root instead ("the selftests")."""
    if not os.path.exists("/dev/fuse"):
        return "/dev/fuse is missing"
    if userns and not os.access("/dev/fuse", os.R_OK | os.W_OK):
        return ("/dev/fuse is not usable by this user (a user namespace mounts with it "
                "directly); as root: chmod 0666 /dev/fuse (Debian's default), or run %s "
                "as root" % who)
    return None


# --- the mount table ------------------------------------------------------------

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
    raise NamespaceError("could not detach the existing tracefs mounts: %s" % tracefs_lines())


def bind(src: str, dst: str, recursive: bool = False) -> str | None:
    """``mount --bind src dst`` (``--rbind``: with the mounts below
    ``src``); the error text, or None."""
    r = subprocess.run(["mount", "--rbind" if recursive else "--bind", src, dst],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return None if r.returncode == 0 else (r.stdout.strip() or "status %d" % r.returncode)


def bind_served(mnt: Path, path: str, bound: list[str], userns: bool, log=_note) -> None:
    """Bind the daemon's ``path`` (under ``mnt``) over the host's ``path``
    in this private namespace.  The daemon must serve it: otherwise a test
    would change the host.  In a user namespace the host may refuse the
    bind: then the test that writes it fails instead of changing the host
    (the host refuses such a write there too)."""
    src = mnt / path.lstrip("/")
    if not src.exists():
        raise NamespaceError("the daemon serves no %s: a test would change the host's" % path)
    err = bind(str(src), path)
    if err is not None:
        if userns:
            log("note: %s stays the host's here (%s)" % (path, err))
            return
        raise NamespaceError("mount --bind of %s failed: %s" % (path, err))
    bound.append(path)


# --- the daemon -----------------------------------------------------------------

def wait_ready(mnt: Path, daemon: subprocess.Popen, timeout: float,
               probe: str = "sys/kernel/tracing/tracing_on") -> None:
    """Until ``mnt`` is mounted and ``mnt/probe`` exists (the daemon answers)."""
    target = mnt / probe
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if daemon.poll() is not None:
            raise NamespaceError("the daemon exited with status %d before the mount was "
                                 "ready" % daemon.returncode)
        if any(m == str(mnt) for _, m, _ in mounts()) and target.exists():
            return
        time.sleep(0.05)
    raise NamespaceError("the mount was not ready after %ds" % timeout)


def stop(proc: subprocess.Popen | None, grace: float) -> None:
    """Wait *grace* s for *proc* to exit, then SIGTERM, then SIGKILL its group."""
    if proc is None:
        return
    for sig in (None, signal.SIGTERM, signal.SIGKILL):
        if sig is not None and proc.poll() is None:
            try:
                if sig == signal.SIGKILL:
                    os.killpg(proc.pid, sig)   # its own session (start_new_session)
                else:
                    proc.send_signal(sig)
            except (ProcessLookupError, PermissionError):
                pass
        try:
            proc.wait(timeout=grace)
            return
        except subprocess.TimeoutExpired:
            continue
