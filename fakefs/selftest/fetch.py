"""Obtaining ftracetest: a kernel tree, a tarball or Debian's linux-source-6.12.

Without ``--ksrc``, the package is downloaded once with ``apt-get download``
and its ftrace selftest directory extracted, both cached under
``${XDG_CACHE_HOME:-~/.cache}/fakefs/``.  Nothing upstream is ever part of
this repository.
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from .errors import SelftestError, log

FTRACE_REL = "tools/testing/selftests/ftrace"
DEB_PACKAGE = "linux-source-6.12"


def default_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "fakefs"


def is_ftrace_dir(path: Path) -> bool:
    """True if *path* holds an ftracetest harness (ftracetest, test.d/functions)."""
    return (path / "ftracetest").is_file() and (path / "test.d" / "functions").is_file()


def ftrace_dir_in_tree(ksrc: Path) -> Path:
    """The ftrace selftest directory of a kernel tree (or the directory itself)."""
    for cand in (ksrc / FTRACE_REL, ksrc):
        if is_ftrace_dir(cand):
            return cand
    raise SelftestError("%s: no %s/{ftracetest,test.d/functions} in this kernel tree"
                        % (ksrc, FTRACE_REL))


def _run_pipeline(cmds: list[list[str]], cwd: Path | None = None) -> None:
    """Run ``cmds[0] | cmds[1] | ...``; raise SelftestError if any stage fails."""
    procs: list[subprocess.Popen] = []
    prev = None
    try:
        for i, cmd in enumerate(cmds):
            last = i == len(cmds) - 1
            p = subprocess.Popen(cmd, stdin=prev, cwd=cwd,
                                 stdout=None if last else subprocess.PIPE,
                                 stderr=subprocess.PIPE)
            if prev is not None:
                prev.close()  # only the next stage holds the read end
            prev = p.stdout
            procs.append(p)
        errs = []
        for p in reversed(procs):
            _, err = p.communicate()
            if p.returncode != 0:
                errs.append("%s: exit %d: %s" % (p.args[0], p.returncode,
                                                  err.decode(errors="replace").strip()))
        if errs:
            raise SelftestError("extraction failed: " + "; ".join(errs))
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()


def _extract_from_tarball(tarball_stream_cmds: list[list[str]], dest: Path) -> None:
    """Extract ``*/tools/testing/selftests/ftrace/*`` of a kernel source tarball
    (produced on stdout by the given pipeline) to *dest* atomically."""
    if dest.exists():
        return
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".ftracetest-", dir=dest.parent))
    try:
        raw = tmp / "raw"
        raw.mkdir()
        _run_pipeline(tarball_stream_cmds + [
            ["tar", "-xf", "-", "-C", str(raw), "--wildcards", "--no-same-owner",
             "*/%s/*" % FTRACE_REL]])
        found = [p for p in raw.glob("*/" + FTRACE_REL) if is_ftrace_dir(p)]
        if not found:
            raise SelftestError("the tarball has no %s" % FTRACE_REL)
        os.rename(found[0], tmp / "ftrace")
        try:
            os.rename(tmp / "ftrace", dest)
        except OSError:
            if not is_ftrace_dir(dest):  # someone else won the race with a good copy?
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def extract_deb(deb: Path, dest: Path) -> None:
    """Extract the ftrace selftests from a ``linux-source-*.deb`` into *dest*."""
    _extract_from_tarball([
        ["dpkg-deb", "--fsys-tarfile", str(deb)],
        ["tar", "-xOf", "-", "--wildcards", "./usr/src/linux-source-*.tar.*"],
        ["xz", "-dc"],
    ], dest)


def extract_tarball(tarball: Path, dest: Path) -> None:
    """Extract the ftrace selftests from a kernel source tarball into *dest*."""
    decomp = {".xz": ["xz", "-dc"], ".gz": ["gzip", "-dc"], ".bz2": ["bzip2", "-dc"],
              ".zst": ["zstd", "-dc"]}.get(tarball.suffix, ["cat"])
    _extract_from_tarball([decomp + [str(tarball)]], dest)


def _deb_version(deb: Path) -> str:
    parts = deb.name.split("_")
    return parts[1] if len(parts) >= 3 else deb.stem


def _version_key(version: str):
    """A sort key for Debian versions that is good enough for our packages
    (numbers compare as numbers, ``~`` sorts first)."""
    key = []
    for tok in re.findall(r"\d+|~|[^\d~]+", version):
        if tok.isdigit():
            key.append((2, int(tok), ""))
        elif tok == "~":
            key.append((0, 0, ""))
        else:
            key.append((1, 0, tok))
    key.append((1, 0, ""))
    return key


def cached_debs(cache_dir: Path) -> list[Path]:
    """Cached ``linux-source-6.12`` packages, newest last."""
    debs = list(cache_dir.glob("%s_*.deb" % DEB_PACKAGE))
    return sorted(debs, key=lambda d: _version_key(_deb_version(d)))


def deb_candidate() -> tuple[str, int] | None:
    """(version, size in bytes) of the package apt would download, from
    ``apt-cache show``; None when apt does not know it (no lists yet)."""
    try:
        r = subprocess.run(["apt-cache", "show", "--no-all-versions", DEB_PACKAGE],
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    except OSError:
        return None
    version = re.search(r"^Version: (\S+)$", r.stdout, re.M)
    size = re.search(r"^Size: (\d+)$", r.stdout, re.M)
    if r.returncode != 0 or not version or not size:
        return None
    return version.group(1), int(size.group(1))


def download_notice(cache_dir: Path, candidate: tuple[str, int] | None) -> str:
    """What is about to be downloaded, how big it is and where it goes."""
    what = ("%s %s (%d MB)" % (DEB_PACKAGE, candidate[0], round(candidate[1] / 1e6))
            if candidate else "%s (about 150 MB)" % DEB_PACKAGE)
    return ("downloading %s once with apt-get download into %s, for its ftrace "
            "selftests (--ksrc DIR or KSRC=DIR takes them from a kernel tree instead) ..."
            % (what, cache_dir))


def download_deb(cache_dir: Path) -> Path:
    """``apt-get download linux-source-6.12`` into *cache_dir* (atomically)."""
    if shutil.which("apt-get") is None:
        raise SelftestError("no %s in %s and no apt-get to download it: use --ksrc DIR "
                            "or KSRC=DIR (a kernel tree, its .deb or a source tarball)"
                            % (DEB_PACKAGE, cache_dir))
    cache_dir.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".download-", dir=cache_dir))
    try:
        for attempt in (1, 2):
            log(download_notice(cache_dir, deb_candidate()))
            r = subprocess.run(["apt-get", "download", DEB_PACKAGE], cwd=tmp,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            debs = list(tmp.glob("%s_*.deb" % DEB_PACKAGE))
            if r.returncode == 0 and debs:
                final = cache_dir / debs[0].name
                os.rename(debs[0], final)
                return final
            if attempt == 1:
                log("download failed; running apt-get update once")
                subprocess.run(["apt-get", "update"], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
        raise SelftestError("could not download %s (apt-get download said: %s)\n"
                            "ftracetest needs its ftrace selftests: use --ksrc DIR or KSRC=DIR "
                            "(a kernel tree, its .deb or a source tarball)"
                            % (DEB_PACKAGE, r.stdout.strip() or "nothing"))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def obtain_ftracetest(ksrc: str | None, cache_dir: Path) -> Path:
    """Return a directory holding ``ftracetest`` and ``test.d/``.

    *ksrc* may be a kernel tree, the ftrace selftest directory itself, a
    ``linux-source-*.deb`` or a source tarball; without it the Debian package
    is downloaded (once) and its ftrace selftests extracted into the cache.
    """
    if ksrc:
        p = Path(ksrc).expanduser()
        if p.is_dir():
            return ftrace_dir_in_tree(p)
        if p.is_file() and (p.suffix == ".deb" or ".tar" in p.name):
            dest = cache_dir / ("ftracetest-from-" + re.sub(r"[^\w.+-]", "_", p.name))
            with _cache_lock(cache_dir):
                if not is_ftrace_dir(dest):
                    shutil.rmtree(dest, ignore_errors=True)
                    log("extracting the ftrace selftests from %s ..." % p)
                    (extract_deb if p.suffix == ".deb" else extract_tarball)(p, dest)
            return dest
        raise SelftestError("--ksrc/KSRC %s: not a kernel tree, .deb or tarball" % ksrc)

    with _cache_lock(cache_dir):
        debs = cached_debs(cache_dir)
        deb = debs[-1] if debs else download_deb(cache_dir)
        dest = cache_dir / ("ftracetest-" + re.sub(r"[^\w.+-]", "_", _deb_version(deb)))
        if not is_ftrace_dir(dest):
            shutil.rmtree(dest, ignore_errors=True)
            log("extracting the ftrace selftests from %s ..." % deb.name)
            extract_deb(deb, dest)
        return dest


class _cache_lock:
    """An exclusive flock on ``<cache>/.selftest.lock`` (serializes downloads)."""

    def __init__(self, cache_dir: Path):
        self.cache_dir = cache_dir
        self.fd = -1

    def __enter__(self):
        self.cache_dir.mkdir(parents=True, exist_ok=True)
        self.fd = os.open(self.cache_dir / ".selftest.lock", os.O_RDWR | os.O_CREAT, 0o644)
        fcntl.flock(self.fd, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc):
        os.close(self.fd)
