"""The ``fakefs selftest`` command: its arguments and the outer stage.

The outer stage obtains the harness, prepares the work tree, re-executes
``python -m fakefs.selftest --inner CONFIG`` under ``unshare`` (the inner
stage, inner.py) and reports what ftracetest printed.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ..cli.namespace import child_env as _child_env
from .errors import SelftestError, log
from .fetch import DEB_PACKAGE, default_cache_dir, obtain_ftracetest
from .inner import ftracetest_cmd, inner_main
from .namespace import TRACING_DIR, check_host, mount_ns, use_userns
from .queue import ShardQueue
from .results import merge_shards, parse_output, report, shards_text
from .table import load_why, log_reasons, render
from .worktree import (NEVER_REACHES_MOUNT, WorkTree, add_extra, expected_cases, make_work_tree,
                       mark_unsupported, mark_unsupported_in_userns, select_tests)

DEFAULT_TIMEOUT = 1800
# a shard's claim: the tests left over this times the shards (queue.py)
SHARE_DIVISOR = 2


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
    g.add_argument("--table", metavar="FILE", type=Path, default=None,
                   help="write every case's result, and why it did not pass, to FILE "
                        "(markdown)")
    g.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, metavar="SEC",
                   help="kill ftracetest after SEC seconds (default %d; 0 = never)"
                        % DEFAULT_TIMEOUT)
    g.add_argument("--fail-unsupported", action="store_true",
                   help="count UNSUPPORTED as a failure (ftracetest option)")
    g.add_argument("--fail-unresolved", action="store_true",
                   help="count UNRESOLVED as a failure (ftracetest option)")
    g.add_argument("--stop-fail", action="store_true", help="stop at the first failure")
    g.add_argument("-j", "--jobs", type=int, default=1, metavar="N",
                   help="run the tests in up to N shards at once, each its own mount in its "
                        "own private mount namespace, taking a part of the tests left when "
                        "free (smaller as fewer are left), run by one ftracetest; their "
                        "results are printed together when all are done, numbered as one "
                        "run would number them (default 1)")
    g.add_argument("--more-jobs-when", metavar="FILE", default=None,
                   help="with -j N: start one shard, and the others once FILE exists "
                        "(make test: when the unit tests are done)")


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


def ftracetest_argv(args, tree: WorkTree, tests: list[Path], base: Path | None = None) -> list[str]:
    """``base``: the directory of the run's files (its logs), by default the tree's."""
    base = tree.root if base is None else base
    return ftracetest_cmd(ftracetest_base(args, tree), str(base / "logs"), [str(t) for t in tests])


def ftracetest_base(args, tree: WorkTree) -> list[str]:
    """ftracetest with its options, before its log directory and tests (``ftracetest_cmd``)."""
    # -v: ftracetest prints the log of each failed test; -vv: every test's output.
    argv = ["/bin/sh", str(tree.ftrace / "ftracetest"), ["-v", "-vv", "-vvv"][min(args.verbose, 2)]]
    if args.keep or args.table:
        argv.append("-k")           # every log: the table reads why a test did not pass
    if args.fail_unsupported:
        argv.append("--fail-unsupported")
    if args.fail_unresolved:
        argv.append("--fail-unresolved")
    if args.stop_fail:
        argv.append("--stop-fail")
    return argv


def run(args) -> int:
    """Entry point of ``fakefs selftest`` (returns the exit status)."""
    root = None
    try:
        cache_dir = args.cache_dir or default_cache_dir()
        if not args.list:
            check_host()
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
        mark_unsupported(tree, tests, NEVER_REACHES_MOUNT)
        if use_userns():
            marked = mark_unsupported_in_userns(tree, tests)
            log("not root: running in a user namespace (unshare -Urm)%s"
                 % ("; UNSUPPORTED there: " + ", ".join(marked) if marked else ""))
        return run_in_namespace(args, tree, tests)
    except SelftestError as e:
        log("error: %s" % e)
        return 2
    except KeyboardInterrupt:
        log("interrupted")
        return 130
    finally:
        if root is not None:
            if args.keep and not args.list:
                log("work directory kept: %s" % root)
            else:
                shutil.rmtree(root, ignore_errors=True)



def run_in_namespace(args, tree: WorkTree, tests: list[Path]) -> int:
    cases = expected_cases(tree, tests)
    jobs = max(1, min(args.jobs, len(tests)))
    log("running %d test(s), %d result(s) with the instance re-runs, in a private mount "
        "namespace%s" % (len(tests), len(cases),
                         "" if jobs == 1 else " each, in up to %d shards at once" % jobs))
    if jobs == 1:
        p = _start_shard(args, tree, tree.root, {"ftracetest": ftracetest_argv(args, tree, tests),
                                                 "output": str(tree.root / "ftracetest.out")})
        try:
            rc = _wait_all([p])
        except KeyboardInterrupt:
            _wait_all([p], interrupted=True)
            raise
        status_file, out_file = tree.root / "inner.json", tree.root / "ftracetest.out"
        status = json.loads(status_file.read_text()) if status_file.exists() else {}
        summ = parse_output(out_file.read_text(errors="replace") if out_file.exists() else "")
        reasons = log_reasons(tree.root / "logs") if args.table is not None else {}
    else:
        summ, status, reasons, rc = _run_in_shards(args, tree, tests, cases, jobs)
    if args.table is not None:
        title = "Upstream ftracetest (Linux 6.12) against fakefs"
        args.table.parent.mkdir(parents=True, exist_ok=True)
        args.table.write_text(render(summ.results, cases, reasons, load_why(), title))
        log("table written: %s" % args.table)
    return report(summ, cases, status, rc)


def _run_in_shards(args, tree: WorkTree, tests: list[Path], cases: list, jobs: int) -> tuple:
    """Up to ``jobs`` shards, each taking the next tests left (queue.py) for
    one ftracetest at a time; one shard first and the others once
    ``--more-jobs-when``'s file exists, if given.  (the summary, the status,
    the table's reasons, the worst inner exit status), the cases numbered as
    one run of all the tests would number them."""
    queue = ShardQueue.create(tree.root / "queue", len(tests))
    rels = [tree.rel(t) for t in tests]
    runs_dir = tree.root / "runs"
    more_when = Path(args.more_jobs_when) if args.more_jobs_when else None
    procs: list = []

    def start_one():
        n = len(procs)
        base = tree.root / ("shard%d" % n)
        base.mkdir()
        procs.append(_start_shard(args, tree, base, {
            "queue": str(queue.path), "divisor": SHARE_DIVISOR * jobs, "shard": n,
            "tests": [str(t) for t in tests], "rels": rels, "runs_dir": str(runs_dir),
            "ftracetest": ftracetest_base(args, tree),
            "stop_fail": args.stop_fail}, console=False))

    try:
        start_one()
        while any(p.poll() is None for p in procs):
            if len(procs) < jobs and (more_when is None or more_when.exists()) \
                    and queue.left() > 0:
                start_one()
                log("shard %d of up to %d started (%d test(s) left)"
                    % (len(procs), jobs, queue.left()))
                continue
            time.sleep(0.2)
    except KeyboardInterrupt:
        _wait_all(procs, interrupted=True)
        raise
    rc = _wait_all(procs)
    statuses = []
    runs: dict = {}
    for n in range(len(procs)):
        f = tree.root / ("shard%d" % n) / "inner.json"
        st = json.loads(f.read_text()) if f.exists() else {"error": "shard %d left no status" % (n + 1)}
        statuses.append(st)
        runs.update(st.get("runs", {}))
    parts, failed, ran = [], [], set()
    for key, run in sorted(runs.items(), key=lambda kv: int(kv[0])):
        start, end = int(key), run["end"]
        ran.update(range(start, end))
        out = runs_dir / ("%04d" % start) / "ftracetest.out"
        text = out.read_text(errors="replace") if out.exists() else ""
        part = parse_output(text)
        parts.append((expected_cases(tree, tests[start:end]), part, run,
                      log_reasons(out.parent / "logs") if args.table is not None else {}))
        if part.failed or not part.complete:
            failed.append((" ".join(rels[start:end]), text))
    unrun = [rels[i] for i in range(len(tests)) if i not in ran]
    if unrun:
        log("%d test(s) not run: %s" % (len(unrun), " ".join(unrun)))
        parts.append(([], parse_output(""), {}, {}))          # (not complete)
    summ, status, reasons = merge_shards(cases, parts)
    errors = [st["error"] for st in statuses if st.get("error")]
    if errors and not status.get("error"):
        status["error"] = errors[0]
    for names, text in failed:
        if text:
            # (what went wrong there, in that ftracetest's own numbering)
            print("---- ftracetest of %s: its output (its own numbering) ----\n%s"
                  "---- end of that ftracetest ----" % (names, text), flush=True)
    print(shards_text(summ), end="", flush=True)
    return summ, status, reasons, rc


def _wait_all(procs: list, interrupted: bool = False) -> int:
    """The inner stages' worst exit status, once all have ended (after a
    Ctrl-C, which they got too and clean up after, 30 s each at most)."""
    rcs = []
    for p in procs:
        if interrupted:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        rcs.append(p.wait())
    return max(rcs, default=0)


def _start_shard(args, tree: WorkTree, base: Path, run: dict,
                 console: bool = True) -> subprocess.Popen:
    """The inner stage under ``unshare``, its files in ``base``; ``run``:
    what it runs (ftracetest's ``argv`` and ``output``, or a shard's
    ``queue`` of ``tests`` and how to run them); ``console``: ftracetest's
    output shown as it comes."""
    cfg = {
        "mountpoint": str(base / "mnt"),
        "daemon": daemon_argv(args),
        "daemon_log": str(base / "daemon.log"),
        "cwd": str(tree.ftrace),
        "status": str(base / "inner.json"),
        "timeout": args.timeout,
        "verbose": args.verbose,
        "outer_mnt_ns": mount_ns(),
        "userns": use_userns(),
        "console": console,
    }
    cfg.update(run)
    cfg_file = base / "config.json"
    cfg_file.write_text(json.dumps(cfg, indent=1))
    cmd = ["unshare"] + (["-Ur"] if cfg["userns"] else []) + [
        "-m", "--propagation", "private", "--",
        sys.executable, "-m", "fakefs.selftest", "--inner", str(cfg_file)]
    return subprocess.Popen(cmd, env=_child_env())


def main(argv: list[str] | None = None) -> int:
    """Standalone use: ``python -m fakefs.selftest [options] [TEST...]``."""
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) == 2 and argv[0] == "--inner":
        return inner_main(argv[1])
    parser = argparse.ArgumentParser(prog="fakefs selftest")
    add_arguments(parser)
    return run(parser.parse_args(argv))
