"""Before mounting: is the mount point usable, and is /dev/fuse?

* a stale FUSE mount (its daemon was killed: every access gives ENOTCONN)
  is detached lazily and the mount goes ahead; should that fail, the
  message says what to run;
* a directory that is already a mount point is refused (a second daemon
  would silently stack on the first);
* a /dev/fuse the user cannot open is reported with the fix, before
  libfuse fails with a bare "Permission denied".
"""

from __future__ import annotations

import errno
import grp
import os
import pwd
import shutil
import stat
import subprocess
import threading
import time

from .procfd import unescape_mount_path

FUSE_DEV = "/dev/fuse"


class MountpointError(Exception):
    """A message for the user (already complete)."""


def mounts_at(path: str, mountinfo: str = "/proc/self/mountinfo") -> list[tuple[str, str]]:
    """(fstype, source) of each mount whose mount point is ``path``."""
    out = []
    try:
        with open(mountinfo) as fh:
            for line in fh:
                pre, sep, post = line.partition(" - ")
                f = pre.split()
                if not sep or len(f) < 5 or unescape_mount_path(f[4]) != path:
                    continue
                p = post.split()
                out.append((p[0] if p else "?", p[1] if len(p) > 1 else "?"))
    except OSError:
        pass
    return out


def daemon_pids(path: str) -> list[int]:
    """fakefs daemons whose command line names ``path`` (best effort)."""
    pids = []
    me = os.getpid()
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == me:
            continue
        try:
            with open(f"/proc/{name}/cmdline", "rb") as fh:
                argv = fh.read().split(b"\0")
        except OSError:
            continue
        if any(b"fakefs" in a for a in argv[:3]) and b"mount" in argv and \
                os.fsencode(path) in argv:
            pids.append(int(name))
    return pids


def lazy_unmount(path: str) -> tuple[bool, str]:
    """``fusermount3 -u -z`` (works for root and for the mount's owner)."""
    tool = shutil.which("fusermount3") or shutil.which("fusermount")
    if tool is None:
        cmd = ["umount", "-l", path]
    else:
        cmd = [tool, "-u", "-z", path]
    try:
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           timeout=10)
    except (OSError, subprocess.TimeoutExpired) as e:
        return False, str(e)
    return r.returncode == 0, r.stdout.strip()


def is_mounted(path: str) -> bool:
    """Something is mounted on ``path`` (as /proc/self/mounts says)."""
    path = os.path.realpath(path)
    with open("/proc/self/mounts") as fh:
        return any(line.split()[1] == path for line in fh)


def unmount_and_wait(path: str, tries: int = 50, pause: float = 0.1) -> None:
    """``fusermount3 -u``, wait until the mount is gone, else detach it
    lazily (a daemon that does not answer any more)."""
    if is_mounted(path):
        subprocess.run(["fusermount3", "-u", path], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, check=False)
    for _ in range(tries):
        if not is_mounted(path):
            return
        time.sleep(pause)
    lazy_unmount(path)


def enclosing_mount(path: str, mountinfo: str = "/proc/self/mountinfo") -> tuple[str, str]:
    """(mount point, fstype) of the mount that holds ``path``."""
    best, fstype = "/", "?"
    try:
        with open(mountinfo) as fh:
            for line in fh:
                pre, _, post = line.partition(" - ")
                f = pre.split()
                if len(f) < 5:
                    continue
                mp = unescape_mount_path(f[4])
                inside = path == mp or path.startswith(mp.rstrip("/") + "/")
                if inside and len(mp) >= len(best):
                    best, fstype = mp, (post.split() or ["?"])[0]
    except OSError:
        pass
    return best, fstype


def connection_state(path: str, timeout: float = 3.0) -> str:
    """'alive', 'dead' (ENOTCONN: the daemon is gone) or 'hung' for a FUSE
    mount point.  statfs always reaches the daemon (no attribute cache)."""
    result: list = []

    def probe():
        try:
            os.statvfs(path)
            result.append("alive")
        except OSError as e:
            result.append("dead" if e.errno in (errno.ENOTCONN, errno.ECONNABORTED)
                          else "alive")
    t = threading.Thread(target=probe, daemon=True)
    t.start()
    t.join(timeout)
    return result[0] if result else "hung"


def _recover_stale(path: str, log) -> None:
    ok, out = lazy_unmount(path)
    if not ok:
        raise MountpointError(
            f"fakefs: {path} is a stale FUSE mount (its daemon is gone: "
            f"'Transport endpoint is not connected') and detaching it failed"
            + (f" ({out})" if out else "")
            + f".\nRun: fusermount3 -u -z {path}   (as root: umount -l {path})")
    if log is not None:
        log(f"fakefs: {path} was a stale mount (its daemon is gone): detached it")


def prepare(path: str, log=None) -> None:
    """Check (and if stale, recover) the mount point; raise MountpointError."""
    here = mounts_at(path)
    if here and here[-1][0].startswith("fuse"):
        state = connection_state(path)
        if state == "dead":
            _recover_stale(path, log)
            here = mounts_at(path)
        elif state == "hung":
            raise MountpointError(
                f"fakefs: {path} is a FUSE mount whose daemon does not answer; "
                f"detach it with: fusermount3 -u -z {path}")
    try:
        st = os.stat(path)
    except OSError as e:
        if e.errno not in (errno.ENOTCONN, errno.ECONNABORTED):
            raise MountpointError(f"fakefs: {path}: {e.strerror}") from None
        mp, _ = enclosing_mount(path)
        raise MountpointError(
            f"fakefs: {path} is inside a stale FUSE mount on {mp} (its daemon is gone).\n"
            f"Run: fusermount3 -u -z {mp}   (as root: umount -l {mp})") from None
    if not stat.S_ISDIR(st.st_mode):
        raise MountpointError(f"fakefs: {path}: not a directory")
    if here:
        fstype, source = here[-1]
        pids = daemon_pids(path)
        who = f", fakefs daemon pid {', '.join(map(str, pids))}" if pids else ""
        raise MountpointError(
            f"fakefs: {path} is already a mount point ({fstype} from {source}{who}); "
            f"refusing to mount on top of it.\n"
            f"Unmount it first: fakefs umount {path}   (or pick another directory)")


def holders(path: str) -> list[int]:
    """Processes with their working directory, root or an open file at or
    under ``path`` (best effort: the ones this user may look at)."""
    inside = path.rstrip("/") + "/"
    pids = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        links = [f"/proc/{name}/cwd", f"/proc/{name}/root"]
        try:
            links += [f"/proc/{name}/fd/{fd}" for fd in os.listdir(f"/proc/{name}/fd")]
        except OSError:
            pass
        for link in links:
            try:
                target = os.readlink(link)
            except OSError:
                continue
            if target == path or target.startswith(inside):
                pids.append(int(name))
                break
    return pids


def umount_failure(path: str, shown: str, error: str, lazy: bool) -> str:
    """What went wrong when ``fusermount3 -u [-z] path`` failed with
    ``error``, and what to run instead (``shown``: the path as given)."""
    real = os.path.realpath(path)
    if not mounts_at(real):
        try:
            os.lstat(real)
        except OSError as e:
            if e.errno in (errno.ENOTCONN, errno.ECONNABORTED):
                mp, _ = enclosing_mount(real)
                return (f"{shown} is inside a stale FUSE mount on {mp} (its daemon is gone), "
                        f"not a mount point; detach that one with: fakefs umount -z {mp}")
            return f"{shown}: no such directory"
        return f"{shown}: nothing is mounted there"
    if "busy" in error and not lazy:
        pids = holders(real)
        who = (f" (pid {', '.join(map(str, pids[:8]))}{' ...' if len(pids) > 8 else ''})"
               if pids else "")
        if connection_state(real) != "alive":
            return (f"{shown} is a stale mount (its daemon is gone) that processes still "
                    f"hold{who}: a working directory or open files inside; fakefs umount -z "
                    f"{shown} detaches it now (it goes once they let go)")
        return (f"{shown}: files are open on the mount{who}; fakefs umount -z {shown} "
                f"detaches it now and stops the daemon")
    return error.removeprefix("fusermount3: ")


def fuse_device_problem(dev: str = FUSE_DEV) -> str | None:
    """Why this user cannot use FUSE, with the fix; None if it can."""
    if not os.path.exists(dev):
        return (f"fakefs: {dev} does not exist: the fuse module is not loaded or the "
                f"device node is missing.\nFix (as root): modprobe fuse  "
                f"(or: mknod -m 0666 {dev} c 10 229)")
    if os.geteuid() == 0:
        return None
    if not (shutil.which("fusermount3") or shutil.which("fusermount")):
        return ("fakefs: fusermount3 is not installed; a non-root user mounts through it.\n"
                "Fix (as root): apt-get install fuse3")
    if not os.access(dev, os.R_OK | os.W_OK):
        st = os.stat(dev)
        return (f"fakefs: {dev} is not usable by {_user()}: it is "
                f"{stat.filemode(st.st_mode)} {_name(pwd.getpwuid, st.st_uid)}:"
                f"{_name(grp.getgrgid, st.st_gid)} (fusermount3 opens it as the calling "
                f"user).\nFix (as root): chmod 0666 {dev}   (Debian's default, set by udev's "
                f"50-udev-default.rules; without udev it must be done after each boot), "
                f"or mount as root")
    return None


def explain_failure(libfuse_text: str) -> str:
    """A hint for the usual libfuse / fusermount3 failures ('' if none)."""
    t = libfuse_text
    if FUSE_DEV in t and ("Permission denied" in t or "Operation not permitted" in t):
        return fuse_device_problem() or ""
    if "user_allow_other" in t:
        return ("hint: as a non-root user, allow_other needs 'user_allow_other' in "
                "/etc/fuse.conf (as root: echo user_allow_other >> /etc/fuse.conf)")
    if "unknown option" in t:
        return ("hint: fakefs passes -o options to FUSE, except uid=, gid=, mode= "
                "(tracefs) and CONFIG_*= (Kconfig)")
    return ""


def _user() -> str:
    return _name(pwd.getpwuid, os.geteuid())


def _name(fn, num: int) -> str:
    try:
        return fn(num)[0]
    except KeyError:
        return str(num)
