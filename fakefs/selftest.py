"""``fakefs selftest``: run the upstream ftracetest against a fakefs mount.

The upstream harness (``ftracetest`` + ``test.d/functions`` + ``test.d/``) is
never part of this repository.  It is taken at run time from a kernel tree
(``--ksrc DIR`` or ``KSRC=DIR``) or, by default, from Debian's
``linux-source-6.12`` package, which is downloaded once with ``apt-get
download`` and cached (with the extracted ftrace selftest directory) under
``${XDG_CACHE_HOME:-~/.cache}/fakefs/``.

A run:

1. copies the harness into a temporary work directory and every ``--extra``
   directory into ``test.d/<name>/`` (so the tests find ``test.d/functions``);
2. re-executes itself inside ``unshare -m --propagation private`` (the
   *inner* stage; without root, ``unshare -Ur -m ...``: a user namespace
   where the user is root, if the kernel allows unprivileged ones), which detaches every ``/proc/mounts`` line mentioning
   ``tracefs`` (only in that private namespace), starts ``fakefs mount -f -o
   fsname=tracefs`` on a temporary mount point, bind-mounts its
   ``sys/kernel/tracing`` onto ``/sys/kernel/tracing``, detaches the original
   mount (so the first ``tracefs`` line is ``/sys/kernel/tracing``, as
   ftracetest wants), runs ``ftracetest`` on the chosen tests, then unmounts
   and stops the daemon;
3. prints ftracetest's summary and a final ``N passed, N failed, N skipped``
   line; the exit status is non-zero when a test failed or none ran.
"""

from __future__ import annotations

import argparse
import fcntl
import fnmatch
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

FTRACE_REL = "tools/testing/selftests/ftrace"
DEB_PACKAGE = "linux-source-6.12"
TRACING_DIR = "/sys/kernel/tracing"
SCHED_RT_RUNTIME = "/proc/sys/kernel/sched_rt_runtime_us"
DEFAULT_TIMEOUT = 1800
READY_TIMEOUT = 60

#: ftracetest's result words, in the order of its summary lines.
RESULTS = ("PASS", "FAIL", "UNRESOLVED", "UNTESTED", "UNSUPPORTED", "XFAIL", "UNDEFINED")
_SUMMARY_KEYS = {
    "passed": "PASS",
    "failed": "FAIL",
    "unresolved": "UNRESOLVED",
    "untested": "UNTESTED",
    "unsupported": "UNSUPPORTED",
    "xfailed": "XFAIL",
    "undefined(test bug)": "UNDEFINED",
}
_SUMMARY_RE = re.compile(r"^# of ([a-z()\s]+?):\s+(\d+)\s*$")
_CASE_START_RE = re.compile(r"^\[(\d+)\]")
_RESULT_RE = re.compile(r"\t\[(%s)\]\s*$" % "|".join(RESULTS))
_ANSI_RE = re.compile(r"\x1b\[[0-9;]*[mK]")
_GLOB_CHARS = set("*?[")


class SelftestError(Exception):
    """A setup problem (not a test failure); reported and exit status 2."""


def _log(msg: str) -> None:
    print("selftest: " + msg, file=sys.stderr, flush=True)


# --------------------------------------------------------------------------
# Obtaining ftracetest
# --------------------------------------------------------------------------

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


def download_deb(cache_dir: Path) -> Path:
    """``apt-get download linux-source-6.12`` into *cache_dir* (atomically)."""
    cache_dir.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".download-", dir=cache_dir))
    try:
        for attempt in (1, 2):
            _log("downloading %s (apt-get download) ..." % DEB_PACKAGE)
            r = subprocess.run(["apt-get", "download", DEB_PACKAGE], cwd=tmp,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            debs = list(tmp.glob("%s_*.deb" % DEB_PACKAGE))
            if r.returncode == 0 and debs:
                final = cache_dir / debs[0].name
                os.rename(debs[0], final)
                return final
            if attempt == 1:
                _log("download failed; running apt-get update once")
                subprocess.run(["apt-get", "update"], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
        raise SelftestError("could not download %s: %s\n(use --ksrc DIR or KSRC=DIR to "
                            "use a kernel tree instead)" % (DEB_PACKAGE, r.stdout.strip()))
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
                    _log("extracting the ftrace selftests from %s ..." % p)
                    (extract_deb if p.suffix == ".deb" else extract_tarball)(p, dest)
            return dest
        raise SelftestError("--ksrc/KSRC %s: not a kernel tree, .deb or tarball" % ksrc)

    with _cache_lock(cache_dir):
        debs = cached_debs(cache_dir)
        deb = debs[-1] if debs else download_deb(cache_dir)
        dest = cache_dir / ("ftracetest-" + re.sub(r"[^\w.+-]", "_", _deb_version(deb)))
        if not is_ftrace_dir(dest):
            shutil.rmtree(dest, ignore_errors=True)
            _log("extracting the ftrace selftests from %s ..." % deb.name)
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


# --------------------------------------------------------------------------
# Work directory and test selection
# --------------------------------------------------------------------------

@dataclass
class WorkTree:
    root: Path                     # the work directory
    ftrace: Path                   # root/ftrace: ftracetest + test.d
    extras: dict[str, Path] = field(default_factory=dict)   # test.d name -> source dir

    @property
    def test_d(self) -> Path:
        return self.ftrace / "test.d"

    def rel(self, test: Path) -> str:
        return test.relative_to(self.test_d).as_posix()


def _ignore_copy(directory, names):
    return [n for n in names if n in ("logs", "__pycache__") or n.startswith(".")]


def make_work_tree(ftrace_src: Path, root: Path) -> WorkTree:
    """Copy the ftrace selftest directory to ``root/ftrace``."""
    dst = root / "ftrace"
    shutil.copytree(ftrace_src, dst, symlinks=True, ignore=_ignore_copy)
    return WorkTree(root=root, ftrace=dst)


def _unique_name(tree: WorkTree, base: str) -> str:
    name = base or "extra"
    n = 1
    while (tree.test_d / name).exists():
        n += 1
        name = "%s-%d" % (base, n)
    return name


def add_extra(tree: WorkTree, src: Path) -> str:
    """Copy the test directory *src* into ``test.d/<name>/``; return the name.

    Files are copied byte for byte (no exec bits are needed: ftracetest
    sources the ``.tc`` files).
    """
    src = Path(src)
    if not src.is_dir():
        raise SelftestError("--extra %s: not a directory" % src)
    real = src.resolve()
    for name, s in tree.extras.items():
        if s == real:
            return name
    if not any(real.rglob("*.tc")):
        raise SelftestError("--extra %s: no .tc files in it" % src)
    name = _unique_name(tree, real.name)
    dst = tree.test_d / name
    shutil.copytree(real, dst, symlinks=False, ignore=_ignore_copy,
                    copy_function=shutil.copyfile)
    for d in [dst, *(p for p in dst.rglob("*") if p.is_dir())]:
        d.chmod(0o755)   # copytree copies directory modes (e.g. a read-only source)
    tree.extras[name] = real
    return name


def _tc_files(directory: Path) -> list[Path]:
    return sorted(p for p in directory.rglob("*.tc") if p.is_file())


def select_tests(tree: WorkTree, specs: list[str], cwd: Path | None = None) -> list[Path]:
    """Resolve TEST arguments to ``.tc`` files of the work tree.

    Each spec is tried, in order, as: ``all`` (every test in test.d); a path
    relative to test.d (file or directory); a path relative to each extra
    directory; a glob over the paths relative to test.d (or to an extra
    directory); an existing path (a ``.tc`` file or a directory of tests,
    which is copied in like an --extra).  Without specs: the tests of the
    extra directories, or all of test.d if there are none.
    """
    cwd = cwd or Path.cwd()
    test_d = tree.test_d
    out: list[Path] = []

    def add(paths):
        for p in paths:
            if p not in out:
                out.append(p)

    def expand(p: Path) -> list[Path]:
        if p.is_dir():
            return _tc_files(p)
        if p.is_file() and p.name.endswith(".tc"):
            return [p]
        return []

    if not specs:
        if tree.extras:
            for name in tree.extras:
                add(_tc_files(test_d / name))
        else:
            add(_tc_files(test_d))
        return out

    all_rel = None
    for spec in specs:
        if spec == "all":
            add(_tc_files(test_d))
            continue
        s = spec.rstrip("/") or spec
        found: list[Path] = []
        if not os.path.isabs(s) and ".." not in Path(s).parts:
            found = expand(test_d / s)
            if not found:
                for name in tree.extras:
                    found += expand(test_d / name / s)
            if not found and _GLOB_CHARS & set(s):
                if all_rel is None:
                    all_rel = [(tree.rel(p), p) for p in _tc_files(test_d)]
                pats = [s] + ["%s/%s" % (name, s) for name in tree.extras]
                found = [p for rel, p in all_rel
                         if any(fnmatch.fnmatchcase(rel, pat) or
                                fnmatch.fnmatchcase(rel, pat + "/*") for pat in pats)]
        if not found:
            p = Path(s) if os.path.isabs(s) else cwd / s
            if p.is_dir() and any(p.rglob("*.tc")):
                name = add_extra(tree, p)
                found = _tc_files(test_d / name)
            elif p.is_file() and p.name.endswith(".tc"):
                real = p.resolve()
                for name, src in tree.extras.items():
                    if real.is_relative_to(src):
                        found = [test_d / name / real.relative_to(src)]
                        break
                else:
                    dst_dir = test_d / "cmdline"
                    dst_dir.mkdir(exist_ok=True)
                    dst = dst_dir / real.name
                    if not dst.exists():
                        shutil.copyfile(real, dst)
                    found = [dst]
        if not found:
            raise SelftestError("no test matches %r (looked in test.d%s)" % (
                spec, "".join(", " + n for n in tree.extras)))
        add(found)
    return out


_INSTANCE_RE = re.compile(r"^#[ \t]*flags:.*instance", re.M)
_DESC_RE = re.compile(r"^#[ \t]*description:(.*)$", re.M)


def expected_cases(tree: WorkTree, tests: list[Path]) -> list[tuple[int, str, bool]]:
    """ftracetest's case numbering: (caseno, test path rel. to test.d, instance?)."""
    cases = []
    n = 0
    for t in tests:
        n += 1
        cases.append((n, tree.rel(t), False))
    for t in tests:
        if _INSTANCE_RE.search(t.read_text(errors="replace")):
            n += 1
            cases.append((n, tree.rel(t), True))
    return cases


# --------------------------------------------------------------------------
# Output parsing
# --------------------------------------------------------------------------

@dataclass
class Summary:
    counts: dict[str, int] = field(default_factory=lambda: {r: 0 for r in RESULTS})
    results: dict[int, str] = field(default_factory=dict)   # caseno -> result
    names: dict[int, str] = field(default_factory=dict)     # caseno -> description
    complete: bool = False          # ftracetest printed its summary

    @property
    def passed(self) -> int:
        return self.counts["PASS"]

    @property
    def failed(self) -> int:
        return self.counts["FAIL"] + self.counts["UNDEFINED"]

    @property
    def skipped(self) -> int:
        return self.counts["UNRESOLVED"] + self.counts["UNTESTED"] + self.counts["UNSUPPORTED"]

    @property
    def xfailed(self) -> int:
        return self.counts["XFAIL"]

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def final_line(self) -> str:
        s = "%d passed, %d failed, %d skipped" % (self.passed, self.failed, self.skipped)
        if self.xfailed:
            s += ", %d xfailed" % self.xfailed
        return s


def parse_output(text: str) -> Summary:
    """Parse ftracetest's console output (result lines and summary)."""
    summ = Summary()
    per_case: dict[str, int] = {r: 0 for r in RESULTS}
    current = None
    for raw in text.splitlines():
        line = _ANSI_RE.sub("", raw)
        m = _CASE_START_RE.match(line)
        if m:
            current = int(m.group(1))
            rest = line[m.end():]
            summ.names[current] = _RESULT_RE.sub("", rest).strip()
        m = _RESULT_RE.search(line)
        if m and current is not None and current not in summ.results:
            summ.results[current] = m.group(1)
            per_case[m.group(1)] += 1
            continue
        m = _SUMMARY_RE.match(line)
        if m and m.group(1) in _SUMMARY_KEYS:
            summ.counts[_SUMMARY_KEYS[m.group(1)]] = int(m.group(2))
            if m.group(1).startswith("undefined"):
                summ.complete = True
    if not summ.complete:
        summ.counts = per_case
    return summ


# --------------------------------------------------------------------------
# CLI
# --------------------------------------------------------------------------

def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "Run the upstream ftracetest (from --ksrc/KSRC or Debian's %s package) "
        "against a fakefs mount placed at %s in a private mount namespace."
        % (DEB_PACKAGE, TRACING_DIR))
    parser.add_argument(
        "tests", nargs="*", metavar="TEST",
        help="tests to run: paths relative to test.d (e.g. 00basic/basic1.tc) or to an "
             "--extra directory, directories, globs, or 'all'; default: the --extra "
             "directories' tests (all of test.d without --extra)")
    parser.add_argument("--ksrc", metavar="DIR", default=os.environ.get("KSRC") or None,
                        help="kernel tree (or .deb/tarball) to take ftracetest from "
                             "(default: $KSRC, else the cached %s package)" % DEB_PACKAGE)
    parser.add_argument("--extra", metavar="DIR", action="append", default=[],
                        help="directory of extra .tc tests, copied to test.d/<name>/ "
                             "(repeatable)")
    parser.add_argument("--cache-dir", metavar="DIR", type=Path, default=None,
                        help="download/extraction cache (default: "
                             "${XDG_CACHE_HOME:-~/.cache}/fakefs)")
    g = parser.add_argument_group("daemon")
    g.add_argument("--cmdline", metavar="PARAMS", default=None,
                   help="simulated kernel boot parameters (passed to fakefs mount)")
    g.add_argument("--seed", metavar="N", default=None, help="simulation seed")
    g.add_argument("--persona", metavar="P", default=None, help="simulated kernel persona")
    g.add_argument("-o", dest="mount_options", metavar="OPT[,OPT...]", action="append",
                   default=[], help="extra mount options (fsname=tracefs is always set)")
    g.add_argument("--daemon-cmd", metavar="CMD", default=None,
                   help="command used instead of 'python -m fakefs mount' (it gets "
                        "-f -o OPTS [daemon options] MOUNTPOINT appended)")
    g = parser.add_argument_group("ftracetest")
    g.add_argument("-v", "--verbose", action="count", default=0,
                   help="more output (-v: every test's output, -vv: also shell traces "
                        "and the daemon log)")
    g.add_argument("--keep", action="store_true",
                   help="keep the work directory and every test log")
    g.add_argument("--list", action="store_true", help="list the selected tests and exit")
    g.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, metavar="SEC",
                   help="kill ftracetest after SEC seconds (default %d; 0 = never)"
                        % DEFAULT_TIMEOUT)
    g.add_argument("--fail-unsupported", action="store_true",
                   help="count UNSUPPORTED as a failure (ftracetest option)")
    g.add_argument("--fail-unresolved", action="store_true",
                   help="count UNRESOLVED as a failure (ftracetest option)")
    g.add_argument("--stop-fail", action="store_true", help="stop at the first failure")


def _package_root() -> str:
    return str(Path(__file__).resolve().parent.parent)


def _child_env() -> dict:
    env = dict(os.environ)
    root = _package_root()
    pp = env.get("PYTHONPATH")
    env["PYTHONPATH"] = root + (os.pathsep + pp if pp else "")
    return env


def daemon_argv(args) -> list[str]:
    if args.daemon_cmd:
        argv = shlex.split(args.daemon_cmd)
    else:
        argv = [sys.executable, "-m", "fakefs", "mount"]
    opts = ["fsname=tracefs"]
    for o in args.mount_options:
        opts += [x for x in o.split(",") if x and not x.startswith("fsname=")]
    argv += ["-f", "-o", ",".join(opts)]
    if args.cmdline is not None:
        argv += ["--cmdline", args.cmdline]
    if args.seed is not None:
        argv += ["--seed", str(args.seed)]
    if args.persona is not None:
        argv += ["--persona", args.persona]
    return argv


def ftracetest_argv(args, tree: WorkTree, tests: list[Path]) -> list[str]:
    argv = ["/bin/sh", str(tree.ftrace / "ftracetest"), "-l", str(tree.root / "logs")]
    # -v: ftracetest prints the log of each failed test; -vv: every test's output.
    argv.append(["-v", "-vv", "-vvv"][min(args.verbose, 2)])
    if args.keep:
        argv.append("-k")
    if args.fail_unsupported:
        argv.append("--fail-unsupported")
    if args.fail_unresolved:
        argv.append("--fail-unresolved")
    if args.stop_fail:
        argv.append("--stop-fail")
    return argv + [str(t) for t in tests]


def run(args) -> int:
    """Entry point of ``fakefs selftest`` (returns the exit status)."""
    root = None
    try:
        cache_dir = args.cache_dir or default_cache_dir()
        if not args.list:
            _check_host()
        ftrace_src = obtain_ftracetest(args.ksrc, Path(cache_dir))
        root = Path(tempfile.mkdtemp(prefix="fakefs-selftest."))
        tree = make_work_tree(ftrace_src, root)
        for extra in args.extra:
            add_extra(tree, Path(extra))
        tests = select_tests(tree, args.tests)
        if not tests:
            raise SelftestError("no tests selected")
        if args.list:
            for t in tests:
                print(tree.rel(t))
            return 0
        if use_userns():
            marked = mark_unsupported_in_userns(tree, tests)
            _log("not root: running in a user namespace (unshare -Urm)%s"
                 % ("; UNSUPPORTED there: " + ", ".join(marked) if marked else ""))
        return _run_in_namespace(args, tree, tests)
    except SelftestError as e:
        _log("error: %s" % e)
        return 2
    except KeyboardInterrupt:
        _log("interrupted")
        return 130
    finally:
        if root is not None:
            if args.keep and not args.list:
                _log("work directory kept: %s" % root)
            else:
                shutil.rmtree(root, ignore_errors=True)


# Tests that need what a user namespace cannot give (mounting a real
# tracefs, remounting with options): reported UNSUPPORTED there.
NEEDS_INIT_USERNS = {
    "00basic/mount_options.tc": "mounts a real tracefs (not allowed in a user namespace)",
    "00basic/test_ownership.tc": "remounts tracefs with gid= (not allowed in a user namespace)",
}


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


def _check_host() -> None:
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


def mark_unsupported_in_userns(tree: "WorkTree", tests: list[Path]) -> list[str]:
    """Make the tests a user namespace cannot run exit UNSUPPORTED (in the
    work tree's copy only); returns their names."""
    marked = []
    for t in tests:
        rel = tree.rel(t)
        why = NEEDS_INIT_USERNS.get(rel)
        if why is None:
            continue
        lines = t.read_text().splitlines(keepends=True)
        body = [ln for ln in lines if not ln.startswith("#")]
        head = lines[:len(lines) - len(body)]
        t.write_text("".join(head) + "echo 'fakefs: %s'\nexit_unsupported\n" % why
                     + "".join(body))
        marked.append(rel)
    return marked


def _run_in_namespace(args, tree: WorkTree, tests: list[Path]) -> int:
    cases = expected_cases(tree, tests)
    out_file = tree.root / "ftracetest.out"
    status_file = tree.root / "inner.json"
    cfg = {
        "mountpoint": str(tree.root / "mnt"),
        "daemon": daemon_argv(args),
        "daemon_log": str(tree.root / "daemon.log"),
        "ftracetest": ftracetest_argv(args, tree, tests),
        "cwd": str(tree.ftrace),
        "output": str(out_file),
        "status": str(status_file),
        "timeout": args.timeout,
        "verbose": args.verbose,
        "outer_mnt_ns": _mount_ns(),
        "userns": use_userns(),
    }
    cfg_file = tree.root / "config.json"
    cfg_file.write_text(json.dumps(cfg, indent=1))
    _log("running %d test(s), %d result(s) with the instance re-runs, in a private mount "
         "namespace" % (len(tests), len(cases)))
    cmd = ["unshare"] + (["-Ur"] if cfg["userns"] else []) + [
        "-m", "--propagation", "private", "--",
        sys.executable, "-m", "fakefs.selftest", "--inner", str(cfg_file)]
    p = subprocess.Popen(cmd, env=_child_env())
    try:
        rc = p.wait()
    except KeyboardInterrupt:
        # The inner stage got the SIGINT too and cleans up; give it time.
        try:
            p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
        raise
    status = {}
    if status_file.exists():
        status = json.loads(status_file.read_text())
    text = out_file.read_text(errors="replace") if out_file.exists() else ""
    summ = parse_output(text)
    return report(summ, cases, status, rc)


def report(summ: Summary, cases: list[tuple[int, str, bool]], status: dict, inner_rc: int) -> int:
    """Print the per-test problems and the final line; return the exit status."""
    by_no = {no: (rel, inst) for no, rel, inst in cases}
    bad = [(no, r) for no, r in sorted(summ.results.items()) if r in ("FAIL", "UNDEFINED")]
    if bad:
        print("\nfailed tests:")
        for no, r in bad:
            rel, inst = by_no.get(no, ("?", False))
            print("  [%d] %s%s  %s" % (no, rel, " (instance)" if inst else "", r))
    error = status.get("error")
    if error:
        print("selftest: error: %s" % error, file=sys.stderr)
    if status.get("timed_out"):
        print("selftest: ftracetest timed out and was killed", file=sys.stderr)
    if not summ.complete and not error:
        print("selftest: ftracetest did not print its summary (exit %s)"
              % status.get("ftracetest_rc", inner_rc), file=sys.stderr)
    print(summ.final_line(), flush=True)
    if error and not summ.results:
        return 2
    if summ.failed or summ.total == 0 or not summ.complete or status.get("timed_out"):
        return 1
    if (status.get("ftracetest_rc") or 0) != 0:
        return 1   # e.g. --fail-unsupported
    return 0


# --------------------------------------------------------------------------
# Inner stage (runs inside `unshare -m --propagation private`)
# --------------------------------------------------------------------------

def _unescape_mount_field(s: str) -> str:
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), s)


def _mounts() -> list[tuple[str, str, str]]:
    """(source, mountpoint, type) of every line of /proc/self/mounts."""
    out = []
    with open("/proc/self/mounts") as f:
        for line in f:
            fields = line.split()
            if len(fields) >= 3:
                out.append((fields[0], _unescape_mount_field(fields[1]), fields[2]))
    return out


def _tracefs_lines() -> list[tuple[str, str, str]]:
    """The lines ftracetest's ``grep tracefs /proc/mounts`` would match."""
    out = []
    with open("/proc/self/mounts") as f:
        for line in f:
            if "tracefs" in line:
                fields = line.split()
                out.append((fields[0], _unescape_mount_field(fields[1]), fields[2]))
    return out


def _mount_ns() -> str:
    try:
        return os.readlink("/proc/self/ns/mnt")
    except OSError:
        return ""


def _in_private_mount_ns(outer_ns: str) -> bool:
    """True if this process is in another mount namespace than *outer_ns*
    (the namespace of the process that ran ``unshare``) and no mount in it
    propagates to a peer group (``shared:N`` in mountinfo)."""
    ns = _mount_ns()
    if not ns or not outer_ns or ns == outer_ns:
        return False
    with open("/proc/self/mountinfo") as f:
        for line in f:
            pre = line.split(" - ", 1)[0].split()
            if any(x.startswith("shared:") for x in pre[6:]):
                return False
    return True


def _umount(path: str, lazy: bool = False) -> bool:
    cmd = ["umount"] + (["-l"] if lazy else []) + [path]
    return subprocess.run(cmd, stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL).returncode == 0


def _detach_tracefs_mounts(userns: bool = False) -> None:
    """Lazily unmount every line mentioning tracefs (private namespace only).

    In a user namespace the mounts inherited from the host are locked and
    stay; that is fine when the first of them is TRACING_DIR, which our
    mount then covers (checked after the bind mount)."""
    for _ in range(10):
        lines = _tracefs_lines()
        if not lines:
            return
        detached = False
        for _, mnt, _ in sorted(lines, key=lambda l: -len(l[1])):
            detached |= _umount(mnt, lazy=True)
        if not detached and userns:
            return
    raise SelftestError("could not detach the existing tracefs mounts: %s" % _tracefs_lines())


def _wait_ready(mnt: Path, daemon: subprocess.Popen, timeout: float) -> None:
    target = mnt / "sys" / "kernel" / "tracing" / "tracing_on"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if daemon.poll() is not None:
            raise SelftestError("the daemon exited with status %d before the mount was "
                                "ready" % daemon.returncode)
        if any(m == str(mnt) for _, m, _ in _mounts()) and target.exists():
            return
        time.sleep(0.05)
    raise SelftestError("the mount was not ready after %ds" % timeout)


def _stop(proc: subprocess.Popen, grace: float) -> None:
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


def _tee(stream, out_path: str, done: threading.Event) -> None:
    with open(out_path, "wb") as out:
        for chunk in iter(lambda: stream.readline(), b""):
            out.write(chunk)
            out.flush()
            sys.stdout.buffer.write(chunk)
            sys.stdout.buffer.flush()
    done.set()


def _run_ftracetest(cfg: dict, status: dict) -> None:
    proc = subprocess.Popen(cfg["ftracetest"], cwd=cfg["cwd"], stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True)
    done = threading.Event()
    t = threading.Thread(target=_tee, args=(proc.stdout, cfg["output"], done), daemon=True)
    t.start()
    timeout = cfg.get("timeout") or None
    try:
        status["ftracetest_rc"] = proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        status["timed_out"] = True
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(proc.pid, sig)
            except ProcessLookupError:
                break
            try:
                proc.wait(timeout=5)
                break
            except subprocess.TimeoutExpired:
                pass
        status["ftracetest_rc"] = proc.returncode
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    # Background children of a test may keep the pipe open; don't wait forever.
    done.wait(timeout=5)


def inner_main(cfg_path: str) -> int:
    cfg = json.loads(Path(cfg_path).read_text())
    status: dict = {}
    daemon = None
    bound = False
    rt_orig = None
    mnt = Path(cfg["mountpoint"])
    try:
        if not _in_private_mount_ns(cfg.get("outer_mnt_ns", "")):
            raise SelftestError("refusing to mount: not in a private mount namespace")
        try:
            rt_orig = Path(SCHED_RT_RUNTIME).read_text()
        except OSError:
            pass
        _detach_tracefs_mounts(cfg.get("userns", False))
        mnt.mkdir(exist_ok=True)
        with open(cfg["daemon_log"], "wb") as log:
            daemon = subprocess.Popen(cfg["daemon"] + [str(mnt)], stdin=subprocess.DEVNULL,
                                      stdout=log, stderr=subprocess.STDOUT,
                                      start_new_session=True, cwd="/")
        _wait_ready(mnt, daemon, READY_TIMEOUT)
        r = subprocess.run(["mount", "--bind", str(mnt / "sys/kernel/tracing"), TRACING_DIR],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if r.returncode != 0:
            raise SelftestError("mount --bind failed: %s" % r.stdout.strip())
        bound = True
        # tests look addresses up in /proc/kallsyms: the simulated kernel's
        # (a daemon that serves none leaves the host's)
        r = None
        if (mnt / "proc/kallsyms").exists():
            r = subprocess.run(["mount", "--bind", str(mnt / "proc/kallsyms"), "/proc/kallsyms"],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if r is not None and r.returncode != 0:
            if not cfg.get("userns", False):
                raise SelftestError("mount --bind of /proc/kallsyms failed: %s" % r.stdout.strip())
            _log("note: /proc/kallsyms stays the host's here (%s): tests that look "
                 "addresses up in it may fail" % r.stdout.strip())
        _umount(str(mnt), lazy=True)
        lines = _tracefs_lines()
        if not lines or lines[0][1] != TRACING_DIR:
            raise SelftestError("the first tracefs line of /proc/mounts is %r, not %s"
                                % (lines[:1], TRACING_DIR))
        _run_ftracetest(cfg, status)
    except SelftestError as e:
        status["error"] = str(e)
    except KeyboardInterrupt:
        status["error"] = "interrupted"
    finally:
        if bound and not _umount(TRACING_DIR):
            _umount(TRACING_DIR, lazy=True)
        _umount(str(mnt), lazy=True)
        if daemon is not None:
            _stop(daemon, grace=2)
            status["daemon_rc"] = daemon.returncode
        if rt_orig is not None:
            try:
                if Path(SCHED_RT_RUNTIME).read_text() != rt_orig:
                    Path(SCHED_RT_RUNTIME).write_text(rt_orig)
            except OSError:
                pass
        show_log = cfg.get("verbose", 0) >= 2 or (status.get("error") and daemon is not None)
        if show_log and os.path.exists(cfg["daemon_log"]):
            text = Path(cfg["daemon_log"]).read_text(errors="replace")
            if text.strip():
                print("---- daemon log (last 60 lines) ----")
                print("\n".join(text.splitlines()[-60:]))
                print("---- end of daemon log ----", flush=True)
        Path(cfg["status"]).write_text(json.dumps(status))
    return 0 if not status.get("error") else 2


def main(argv: list[str] | None = None) -> int:
    """Standalone use: ``python -m fakefs.selftest [options] [TEST...]``."""
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) == 2 and argv[0] == "--inner":
        return inner_main(argv[1])
    parser = argparse.ArgumentParser(prog="fakefs selftest")
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
