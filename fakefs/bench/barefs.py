"""A bare pyfuse3 filesystem: the baseline ``make bench`` compares fakefs with.

One small read-only file (``tracing_on`` holding ``1\\n`` unless told
otherwise) at a relative path, each directory on the way being a plain
directory.  The handlers do nothing but answer: what fakefs costs on top of
pyfuse3 + trio is then fakefs's own work.  Two styles:

``matched`` (default): the choices fakefs makes (fuse/adapter.py), so that
    the very same FUSE requests arrive: ``FileInfo(direct_io=True,
    keep_cache=False)``, ``st_size`` 0, ``entry_timeout = attr_timeout =
    1.0`` s, ``default_permissions``, one trio task loop
    (``pyfuse3.main()``, default ``max_tasks``).
``naive``: what pyfuse3's examples/hello.py does: ``FileInfo(fh)`` with
    pyfuse3's defaults (``direct_io=False, keep_cache=True``: reads come
    from the page cache), the real ``st_size``, and ``EntryAttributes``'s
    default timeouts (300 s), ``default_permissions``.

Run in its own process (``python -m fakefs.bench.barefs MOUNTPOINT``; it
stays in the foreground and unmounts on SIGTERM/SIGINT).  Every request
that reaches a Python handler is counted by operation name; the counts are
written as JSON to ``--stats FILE`` on SIGUSR1 and on exit (the file is
replaced atomically: remove it, send the signal, wait for it to appear;
``handler_counts`` does that).  Requests libfuse answers by itself (INIT,
IOCTL, ...) never reach a handler.  With ``--debug`` libfuse logs every
request on stderr (``-o debug``, one line per request): that is how the
benchmark counts the requests of this filesystem and of fakefs (``fakefs
mount -o debug``) the same way (``count_requests``).  The log slows each
request down, so timings are taken on mounts without it.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import errno
import inspect
import json
import os
import re
import signal
import stat
import statistics
import subprocess
import sys
import tempfile
import time

import pyfuse3
import trio

from ..fuse.mountpoint import is_mounted, unmount_and_wait

STYLES = ("matched", "naive")


class BareFS(pyfuse3.Operations):
    supports_dot_lookup = True
    enable_writeback_cache = False

    def __init__(self, relpath: str = "tracing_on", data: bytes = b"1\n", style: str = "matched"):
        super().__init__()
        if style not in STYLES:
            raise ValueError(style)
        self.style = style
        self.data = data
        self.counts: collections.Counter[str] = collections.Counter()
        parts = [p for p in relpath.split("/") if p]
        # inode -> (name, parent inode, mode); directories are a chain ending in the file
        self.nodes = {pyfuse3.ROOT_INODE: (b"", pyfuse3.ROOT_INODE, stat.S_IFDIR | 0o755)}
        self.children: dict[int, dict[bytes, int]] = {pyfuse3.ROOT_INODE: {}}
        parent = pyfuse3.ROOT_INODE
        for i, name in enumerate(parts):
            ino = parent + 1
            last = i == len(parts) - 1
            self.nodes[ino] = (name.encode(), parent, stat.S_IFREG | 0o644 if last
                               else stat.S_IFDIR | 0o755)
            self.children[parent][name.encode()] = ino
            if not last:
                self.children[ino] = {}
            parent = ino
        self.file_ino = parent
        self.stamp = time.time_ns()

    def attrs(self, ino: int) -> pyfuse3.EntryAttributes:
        if ino not in self.nodes:
            raise pyfuse3.FUSEError(errno.ENOENT)
        mode = self.nodes[ino][2]
        a = pyfuse3.EntryAttributes()       # timeouts 300 s unless set (naive)
        if self.style == "matched":
            a.entry_timeout = a.attr_timeout = 1.0
        a.st_ino = ino
        a.st_mode = mode
        a.st_nlink = 1
        if ino in self.children:
            a.st_nlink = 2 + sum(1 for c in self.children[ino].values() if c in self.children)
        a.st_uid, a.st_gid = os.getuid(), os.getgid()
        a.st_size = len(self.data) if self.style == "naive" and ino == self.file_ino else 0
        a.st_blksize = 4096
        a.st_atime_ns = a.st_mtime_ns = a.st_ctime_ns = self.stamp
        return a

    async def getattr(self, inode, ctx=None):
        return self.attrs(inode)

    async def lookup(self, parent_inode, name, ctx=None):
        kids = self.children.get(parent_inode)
        if kids is None:
            raise pyfuse3.FUSEError(errno.ENOTDIR)
        if name == b".":
            return self.attrs(parent_inode)
        if name == b"..":
            return self.attrs(self.nodes[parent_inode][1])
        if name not in kids:
            raise pyfuse3.FUSEError(errno.ENOENT)
        return self.attrs(kids[name])

    async def forget(self, inode_list):
        pass

    async def opendir(self, inode, ctx):
        if inode not in self.children:
            raise pyfuse3.FUSEError(errno.ENOTDIR)
        return inode

    async def readdir(self, fh, start_id, token):
        names = sorted(self.children[fh].items())
        for i in range(start_id, len(names)):
            name, ino = names[i]
            if not pyfuse3.readdir_reply(token, name, self.attrs(ino), i + 1):
                break

    async def releasedir(self, fh):
        pass

    async def open(self, inode, flags, ctx):
        if inode != self.file_ino:
            raise pyfuse3.FUSEError(errno.EISDIR if inode in self.children else errno.ENOENT)
        if flags & os.O_ACCMODE != os.O_RDONLY:
            raise pyfuse3.FUSEError(errno.EACCES)
        if self.style == "naive":
            return pyfuse3.FileInfo(fh=inode)
        return pyfuse3.FileInfo(fh=inode, direct_io=True, keep_cache=False)

    async def read(self, fh, off, size):
        return self.data[off:off + size]

    async def flush(self, fh):
        pass

    async def release(self, fh):
        pass

    async def statfs(self, ctx):
        s = pyfuse3.StatvfsData()
        s.f_bsize = s.f_frsize = 4096
        s.f_namemax = 255
        return s


def _counted(name, fn):
    async def wrapper(self, *args, **kwargs):
        self.counts[name] += 1
        return await fn(self, *args, **kwargs)
    wrapper.__name__ = name
    return wrapper


# count every handler pyfuse3 may call, the ones left to Operations (ENOSYS) too
for _name, _fn in inspect.getmembers(BareFS, inspect.iscoroutinefunction):
    if not _name.startswith("_"):
        setattr(BareFS, _name, _counted(_name, _fn))


def _write_json(path: str, obj) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w") as fh:
        json.dump(obj, fh, sort_keys=True)
    os.replace(tmp, path)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m fakefs.bench.barefs", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("mountpoint")
    p.add_argument("--path", default="tracing_on", help="where the file is, below the mount")
    p.add_argument("--data", default="1\n", help="what the file holds")
    p.add_argument("--style", choices=STYLES, default="matched")
    p.add_argument("--stats", help="write the request counts (JSON) here on SIGUSR1 and on exit")
    p.add_argument("--debug", action="store_true", help="libfuse logs each request on stderr")
    args = p.parse_args(argv)
    ops = BareFS(args.path, args.data.encode(), args.style)
    options = set(pyfuse3.default_options) | {"fsname=barefs", "subtype=barefs"}
    if args.debug:
        options.add("debug")

    def dump(*_):
        if args.stats:
            _write_json(args.stats, dict(ops.counts))

    def stop(*_):
        pyfuse3.terminate()
    pyfuse3.init(ops, args.mountpoint, options)
    signal.signal(signal.SIGUSR1, dump)
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    try:
        trio.run(pyfuse3.main)
    finally:
        pyfuse3.close(unmount=True)
        dump()
    return 0


# --- helpers for the benchmark and the tests ---------------------------------

def wait_mounted(path: str, proc: subprocess.Popen | None = None, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not is_mounted(path):
        if proc is not None and proc.poll() is not None:
            raise RuntimeError("the filesystem process exited (%s) before mounting %s"
                               % (proc.returncode, path))
        if time.monotonic() > deadline:
            raise RuntimeError("%s not mounted after %.0f s" % (path, timeout))
        time.sleep(0.02)


def _child_env() -> dict[str, str]:
    env = dict(os.environ)
    pkg_root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = pkg_root + os.pathsep + env.get("PYTHONPATH", "")
    return env


def _cleanup(mnt: str, *files: str) -> None:
    unmount_and_wait(mnt)
    for f in files:
        with contextlib.suppress(OSError):
            os.unlink(f)
    with contextlib.suppress(OSError):
        os.rmdir(mnt)


@contextlib.contextmanager
def fakefs_mounted(debug: bool = False, args: tuple = ()):
    """A fakefs daemon (``fakefs mount``; ``-o debug`` logs each request;
    ``args``: more options of ``fakefs mount``).  Yields (mountpoint,
    daemon log)."""
    mnt = tempfile.mkdtemp(prefix="fakefs-bench-")
    log = mnt + ".log"
    cmd = [sys.executable, "-m", "fakefs", "mount", "--log", log] + \
        (["-o", "debug"] if debug else []) + list(args) + [mnt]
    try:
        subprocess.run(cmd, check=True, env=_child_env(), timeout=60)
        yield mnt, log
    finally:
        _cleanup(mnt, log)


@contextlib.contextmanager
def barefs_mounted(relpath: str = "tracing_on", style: str = "matched", debug: bool = False):
    """Mount the bare filesystem in a child process on a fresh directory.
    Yields (mountpoint, log file (its stderr), stats file, process)."""
    mnt = tempfile.mkdtemp(prefix="barefs-")
    log, stats = mnt + ".log", mnt + ".stats"
    cmd = [sys.executable, "-m", "fakefs.bench.barefs", "--path", relpath, "--style", style,
           "--stats", stats] + (["--debug"] if debug else []) + [mnt]
    with open(log, "ab") as err:
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=err, stderr=err,
                                env=_child_env())
    try:
        wait_mounted(mnt, proc)
        yield mnt, log, stats, proc
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        _cleanup(mnt, log, stats)


def handler_counts(proc: subprocess.Popen, stats: str, timeout: float = 10.0) -> dict[str, int]:
    """The counts of the bare filesystem's Python handlers so far (SIGUSR1)."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(stats)
    proc.send_signal(signal.SIGUSR1)
    deadline = time.monotonic() + timeout
    while not os.path.exists(stats):
        if time.monotonic() > deadline or proc.poll() is not None:
            raise RuntimeError("no request counts from the bare filesystem")
        time.sleep(0.01)
    with open(stats) as fh:
        return json.load(fh)


# libfuse's debug line for each request received (fuse_lowlevel.c)
REQUEST_LINE = re.compile(rb"^unique: \d+, opcode: (\w+) \(\d+\)", re.M)


def count_requests(log: str, start: int = 0) -> collections.Counter[str]:
    """FUSE requests (by opcode) that libfuse logged in ``log`` after byte ``start``."""
    with open(log, "rb") as fh:
        fh.seek(start)
        text = fh.read()
    return collections.Counter(m.decode() for m in REQUEST_LINE.findall(text))


def _quiet_size(log: str, settle: float, timeout: float) -> int:
    deadline = time.monotonic() + timeout
    size, since = os.path.getsize(log), time.monotonic()
    while time.monotonic() - since < settle and time.monotonic() < deadline:
        time.sleep(0.02)
        cur = os.path.getsize(log)
        if cur != size:
            size, since = cur, time.monotonic()
    return size


def requests_of(log: str, action, settle: float = 0.1, timeout: float = 5.0) -> collections.Counter:
    """Run ``action()`` and return the requests it caused.  RELEASE is sent
    after close() returns: wait until every OPEN has its RELEASE and the log
    has been quiet for ``settle`` seconds (and before: until it is quiet,
    so that the RELEASE of an earlier close is not counted)."""
    start = _quiet_size(log, settle, timeout)
    action()
    deadline = time.monotonic() + timeout
    size, quiet_since = -1, time.monotonic()
    while True:
        now = time.monotonic()
        cur = os.path.getsize(log)
        if cur != size:
            size, quiet_since = cur, now
        counts = count_requests(log, start)
        balanced = counts["OPEN"] == counts["RELEASE"] and counts["OPENDIR"] == counts["RELEASEDIR"]
        if (balanced and now - quiet_since >= settle) or now > deadline:
            return counts
        time.sleep(0.02)


def requests_per_cat(logs: dict[str, tuple[str, str]], warm: int = 20, cold: int = 3,
                     cold_gap: float = 1.2) -> dict[str, dict[str, dict[str, float]]]:
    """FUSE requests of one ``cat FILE`` for each ``label: (file, debug log)``.

    ``warm``: the mean over ``warm`` cats run back to back after a first one
    (dentries and attributes cached); ``cold``: the mean over ``cold`` cats
    each ``cold_gap`` s after the previous one (past every 1 s timeout; the
    filesystems take turns so the waits are shared)."""
    def cat(path):
        subprocess.run(["cat", path], check=True, stdout=subprocess.DEVNULL)
    out = {label: {} for label in logs}
    for label, (path, log) in logs.items():
        cat(path)
        c = requests_of(log, lambda: [cat(path) for _ in range(warm)])
        out[label]["warm"] = {k: v / warm for k, v in sorted(c.items())}
    totals = {label: collections.Counter() for label in logs}
    for _ in range(cold):
        time.sleep(cold_gap)
        for label, (path, log) in logs.items():
            totals[label] += requests_of(log, lambda: cat(path))
    for label in logs:
        out[label]["cold"] = {k: v / cold for k, v in sorted(totals[label].items())}
    return out


def median_per_op(fns: dict, n: int, rounds: int) -> dict[str, float]:
    """Median seconds per call of each ``fns[label](n)``, the labels taking
    turns round after round (drift hits them all alike)."""
    per: dict[str, list[float]] = {label: [] for label in fns}
    for _ in range(rounds):
        for label, fn in fns.items():
            t0 = time.perf_counter()
            fn(n)
            per[label].append((time.perf_counter() - t0) / n)
    return {label: statistics.median(v) for label, v in per.items()}


if __name__ == "__main__":
    sys.exit(main())
